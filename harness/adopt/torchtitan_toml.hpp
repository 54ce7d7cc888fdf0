#pragma once
// TorchTitan's job config (TOML) read for the values a card holds. Only `[section]` headers and
// `key = value` lines with strings, numbers and booleans are read: the rest of TOML is never
// needed for these keys.
#include "adopt/script_facts.hpp"

#include <initializer_list>
#include <string>

namespace harness {

/// A TorchTitan config key ("training.seq_len", as the TOML's section.key or a command line's
/// --training.seq_len) and the card field it is.
struct TorchtitanKey {
    const char* key;
    const char* field;
    bool integer;
};

/// a × b × ..., or -1 when the product would overflow (a script's 9-digit degrees).
long long checked_product(std::initializer_list<long long> factors);

/// The key's entry, or null when the card has no field for it.
const TorchtitanKey* torchtitan_key(const std::string& dotted);

/// Adds the TOML's facts (and the batch size and accelerator count they imply) to `out`.
void read_torchtitan_toml(const std::string& text, const std::string& display_name, ScriptFacts& out);

} // namespace harness
