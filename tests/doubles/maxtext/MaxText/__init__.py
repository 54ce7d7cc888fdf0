"""MaxText at tpu-recipes-v0.1.4, as a test double (tests/doubles/maxtext/README.md)."""
