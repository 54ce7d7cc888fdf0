#pragma once
// Escapers for the languages rendered files are written in. The renderer, not the template
// author, decides how a value is quoted: a template only says where it goes.
#include <cstddef>
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

/// A JSON string literal, always quoted, always valid UTF-8: control characters (C0, DEL, C1,
/// bidirectional overrides, U+2028/9) escaped as \uXXXX, each byte that is not part of valid
/// UTF-8 replaced by \ufffd.
std::string json_string(std::string_view value);

/// The length of the valid UTF-8 sequence starting at `at` (1 to 4), or 0 when the byte there
/// does not start one (overlong forms, surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);
/// The code point of the valid sequence of `length` bytes at `at` (from utf8_sequence_length).
char32_t utf8_code_point(std::string_view text, std::size_t at, std::size_t length);

/// Text from input made safe to print on a terminal: control characters (C0, DEL, C1, and the
/// bidirectional overrides that reorder a line) become \n, \r, \t, \xNN or \uNNNN, bytes that
/// are not valid UTF-8 become \xNN; everything else, backslashes included, is unchanged, so a
/// crafted name cannot move the cursor, clear a line or recolour what follows. `multiline`
/// keeps newlines and tabs (a diff, a server's body). Every cli/ print of a string that came
/// from a bundle, card, trace or server goes through this.
std::string terminal_text(std::string_view text, bool multiline = false);

/// True when `value` is one word made only of characters that are safe unquoted in a shell
/// command, an `#SBATCH` line or a Containerfile instruction.
bool is_safe_token(std::string_view value);

/// True for "42", "-3", "0.5", "true", "false".
bool is_plain_number_or_bool(std::string_view value);

} // namespace harness
