"""capePCA of Imtiaz and Sarwate: the star form (Algorithm 2) and its gossip form, their node
programs, guarantee and audit."""
