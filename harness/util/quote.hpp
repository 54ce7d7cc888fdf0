#pragma once
// Escapers for the languages rendered files are written in. The renderer, not the template
// author, decides how a value is quoted: a template only says where it goes.
#include <string>
#include <string_view>

namespace harness {

/// A single shell word: bare when it holds only characters no shell treats specially,
/// double-quoted with \ " $ ` escaped when it holds $ or `, otherwise single-quoted with
/// embedded quotes spliced in ('\'').
std::string shell_quote(std::string_view value);

/// A TOML or JSON/YAML scalar: canonical integers, decimals and booleans stay bare, anything
/// else becomes a double-quoted string with every control character escaped.
std::string toml_scalar(std::string_view value);
std::string json_scalar(std::string_view value);

/// A JSON string literal, always quoted.
std::string json_string(std::string_view value);

/// True when `value` is one word made only of characters that are safe unquoted in a shell
/// command, an `#SBATCH` line or a Containerfile instruction.
bool is_safe_token(std::string_view value);

/// True for "42", "-3", "0.5", "true", "false".
bool is_plain_number_or_bool(std::string_view value);

} // namespace harness
