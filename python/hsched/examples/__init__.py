"""Example policies written in Python: importing a module registers its
policy (``import hsched.examples.edf`` registers ``py-edf``)."""
