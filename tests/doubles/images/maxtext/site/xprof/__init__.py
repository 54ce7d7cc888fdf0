"""xprof (the profile plugin of TensorBoard) as the maxtext image double has it: the one converter remote.sh uses."""
