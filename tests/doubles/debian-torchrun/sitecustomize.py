"""Makes Debian 12's torchrun (python3-torch 1.13 on Python 3.11) start workers at all.

Its Std.from_str maps "0" and "3" (the --redirects/--tee defaults) to None, because
`Std(0) in Std` is False for an IntFlag under Python 3.11, and start_processes then fails with
"'NoneType' object has no attribute 'get'". The PyTorch of the real images (2.x) is not affected.
The test suites put this directory on PYTHONPATH; it touches only a process started as torchrun.
"""
import os
import sys

if os.path.basename(sys.argv[0] if sys.argv else "") == "torchrun":
    try:
        import re

        from torch.distributed.elastic.multiprocessing import api as _api

        def _from_str(cls, vm):
            if re.match(r"^[0-3]$", vm):
                return cls(int(vm))
            if re.match(r"^(\d:[0-3],)*(\d:[0-3])$", vm):
                return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
            raise ValueError(f"{vm} is neither a number 0-3 nor a mapping like 0:1,1:2")

        _api.Std.from_str = classmethod(_from_str)
    except Exception:  # a torch without this module needs no fix
        pass
