"""capePCA of 004: the star form (Algorithm 2) and its gossip form, their node programs, guarantee and
audit."""
