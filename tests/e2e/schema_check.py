"""JSON Schema side of tests/e2e/schema.sh: validates YAML files against a generated schema.

Cards are read as YAML 1.1 (PyYAML's safe loader: yes/no/on/off are booleans), except that
timestamps stay text as JSON and yaml-language-server see them. Needs python3-jsonschema and
python3-yaml (Debian packages; .ci/setup installs them).

  schema_check.py check SCHEMA FILE...            one line per file: "FILE: ok" or "FILE: invalid: why"
  schema_check.py corpus SCHEMA VALIDATE_JSON FILE...
      compares with `ccl-harness validate --json` (no errors <=> schema-valid); prints every
      disagreement not in KNOWN_EXCEPTIONS and every stale exception, exit 1 if any
"""
import json
import sys

import jsonschema
import yaml

# Corpus cards (paths under ccl-bench-cards/) where the schema and validate disagree, each with
# why the schema cannot say what validate says. A new disagreement fails the test.
KNOWN_EXCEPTIONS = {
}


class Loader(yaml.SafeLoader):
    """YAML 1.1 without timestamps; duplicate keys are recorded (JSON Schema never sees them)."""

    duplicate = False


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def construct_mapping(loader, node, deep=False):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in keys:
                loader.duplicate = True
            keys.add(key)
        except TypeError:
            pass
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


def load(path):
    """(document, why it cannot be expressed or None)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        loader = Loader(f.read())
    try:
        document = loader.get_single_data()
    except yaml.YAMLError as e:
        return None, "not YAML 1.1: " + str(e).splitlines()[0]
    finally:
        loader.dispose()
    if loader.duplicate:
        return document, "duplicate keys"
    return document, None


def deepest(error):
    """The innermost reason: an optional section's error is "not valid under any of" its
    alternatives (nothing, or the section); the one that got furthest says what is wrong."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type", e.relative_schema_path[0]))
    return error


def schema_errors(validator, document):
    return sorted(
        ("/".join(str(p) for p in e.absolute_path) or "(top)") + ": " + e.message.splitlines()[0][:160]
        for e in map(deepest, validator.iter_errors(document))
    )


def main(argv):
    mode, schema_path = argv[1], argv[2]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    if mode == "check":
        bad = 0
        for path in argv[3:]:
            document, unexpressible = load(path)
            errors = [unexpressible] if unexpressible else schema_errors(validator, document)
            bad += 1 if errors else 0
            print(f"{path}: " + ("invalid: " + "; ".join(errors) if errors else "ok"))
        return 0
    if mode == "corpus":
        with open(argv[3], encoding="utf-8") as f:
            verdicts = {entry["file"]: entry for entry in json.load(f)}
        root = argv[4].rstrip("/") + "/"
        new, compared, skipped, known_seen = [], 0, [], set()
        for path in argv[5:]:
            name = path[len(root):] if path.startswith(root) else path
            entry = verdicts[path]
            harness_errors = entry["errors"]
            if any("invalid YAML" in e["message"] for e in harness_errors):
                skipped.append(f"{name}: not YAML to yaml-cpp")
                continue
            document, unexpressible = load(path)
            if unexpressible:
                skipped.append(f"{name}: {unexpressible}")
                continue
            compared += 1
            errors = schema_errors(validator, document)
            if bool(errors) == bool(harness_errors):
                continue
            if name in KNOWN_EXCEPTIONS:
                known_seen.add(name)
                continue
            side = "schema rejects, validate accepts" if errors else "validate rejects, schema accepts"
            detail = errors[0] if errors else harness_errors[0]["field"] + ": " + harness_errors[0]["message"]
            new.append(f"{name}: {side}: {detail}")
        stale = sorted(set(KNOWN_EXCEPTIONS) - known_seen)
        print(f"compared {compared} cards, skipped {len(skipped)} the schema cannot express, "
              f"{len(known_seen)} known exceptions, {len(new)} new disagreements, {len(stale)} stale exceptions")
        for line in skipped:
            print("  skipped: " + line)
        for line in new:
            print("  NEW: " + line)
        for line in stale:
            print("  STALE (agrees now; remove from KNOWN_EXCEPTIONS): " + line)
        return 1 if new or stale else 0
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
