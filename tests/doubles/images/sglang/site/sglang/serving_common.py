"""What the launch_server and bench_serving doubles share: the contract's sections, parsed as the
real argparse parsers parse them (docs/contracts/sglang-29481685462732237d80d86076d6563e1f658102.yaml,
launch_server: and bench_serving:, which cite the source)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "..", "lib"))
import double_common as dc  # noqa: E402

REF = "29481685462732237d80d86076d6563e1f658102"


def parse(argv, section, prog):
    """argv parsed by argparse over the section's options: a unique prefix taken (allow_abbrev
    True), an unknown option refused with exit 2, a value outside `choices` refused with exit 2."""
    contract = dc.load_contract("sglang", REF)
    sub = {"framework": "sglang", "allow_abbrev": contract[section].get("allow_abbrev"),
           "options": contract[section]["options"]}
    opts = dc.parse_argparse(argv, sub, prog)
    return opts
