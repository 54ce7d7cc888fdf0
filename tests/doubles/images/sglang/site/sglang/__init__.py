"""Stand-in for the lmsysorg/sglang image's sglang package (tests/doubles/images/sglang)."""
