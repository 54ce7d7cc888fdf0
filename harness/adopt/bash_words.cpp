#include "adopt/bash_words.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace harness {

namespace {

struct Variable {
    std::vector<std::string> items;
    std::string unresolved;
};

using Variables = std::map<std::string, Variable>;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The length of the identifier at the start of `text` (0: none). Hand-written, not std::regex:
// libstdc++'s regex recurses per character, and a script's word may be a whole program.
std::size_t identifier_length(const std::string& text, std::size_t from = 0) {
    if (from >= text.size() || !is_name_start(text[from])) {
        return 0;
    }
    std::size_t at = from + 1;
    while (at < text.size() && is_name_char(text[at])) {
        ++at;
    }
    return at - from;
}

std::string shorten(const std::string& text) {
    std::string one_line;
    for (char c : text) {
        one_line += (c == '\n' || c == '\t') ? ' ' : c;
    }
    return one_line.size() > 60 ? one_line.substr(0, 57) + "..." : one_line;
}

// The reader of one stretch of text. A nested one (`whole`) expands a `${X:-default}` default:
// there blanks are part of the word and nothing ends a command.
class Lexer {
public:
    Lexer(const std::string& text, Variables& vars, bool whole) : m_text(text), m_vars(vars), m_whole(whole) {}

    BashScript script() {
        BashScript out;
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c == '\\' && peek(1) == '\n') {
                m_pos += 2;
                ++m_line;
            } else if (c == '\n') {
                end_command(out);
                ++m_pos;
                ++m_line;
                skip_heredocs();
            } else if (is_blank(c)) {
                ++m_pos;
            } else if (c == '#') {
                comment(out);
            } else if (c == '&' && peek(1) == '>') {
                m_pos += peek(2) == '>' ? 3U : 2U;
                discard_word();
            } else if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
                end_command(out); // a subshell's commands are read as the script's own
                ++m_pos;
            } else if (c == '>' || c == '<' || (std::isdigit(static_cast<unsigned char>(c)) != 0 && redirect_fd())) {
                redirect();
            } else {
                if (m_words.empty()) {
                    m_command_line = m_line;
                }
                for (BashWord& word : read_word()) {
                    m_words.push_back(std::move(word));
                }
            }
        }
        end_command(out);
        return out;
    }

    /// The text as one word (a default's expansion).
    BashWord whole_word() {
        std::vector<BashWord> words = read_word();
        BashWord joined;
        for (const BashWord& word : words) {
            joined.text += (joined.text.empty() ? "" : " ") + word.text;
            if (joined.unresolved.empty()) {
                joined.unresolved = word.unresolved;
            }
        }
        return joined;
    }

private:
    char peek(std::size_t ahead) const { return m_pos + ahead < m_text.size() ? m_text[m_pos + ahead] : '\0'; }

    bool redirect_fd() const {
        std::size_t at = m_pos;
        while (at < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[at])) != 0) {
            ++at;
        }
        return at < m_text.size() && (m_text[at] == '>' || m_text[at] == '<');
    }

    void comment(BashScript& out) {
        const std::size_t end = m_text.find('\n', m_pos);
        const std::string line = m_text.substr(m_pos, end == std::string::npos ? std::string::npos : end - m_pos);
        if (m_words.empty() && line.rfind("#SBATCH", 0) == 0) {
            BashCommand command{{}, m_line};
            std::size_t at = 0;
            while (at < line.size()) {
                while (at < line.size() && is_blank(line[at])) {
                    ++at;
                }
                const std::size_t start = at;
                while (at < line.size() && !is_blank(line[at])) {
                    ++at;
                }
                if (at > start) {
                    command.words.push_back({line.substr(start, at - start), m_line, ""});
                }
            }
            // `#SBATCH -N 2 # two nodes`: the comment after the option is not an option.
            for (std::size_t i = 1; i < command.words.size(); ++i) {
                if (command.words[i].text.rfind('#', 0) == 0) {
                    command.words.resize(i);
                    break;
                }
            }
            out.commands.push_back(std::move(command));
        }
        m_pos = end == std::string::npos ? m_text.size() : end;
    }

    void redirect() {
        while (std::isdigit(static_cast<unsigned char>(peek(0))) != 0) {
            ++m_pos;
        }
        if (peek(0) == '<' && peek(1) == '<' && peek(2) != '<') {
            m_pos += 2;
            const bool strip_tabs = peek(0) == '-';
            m_pos += strip_tabs ? 1 : 0;
            while (is_blank(peek(0))) {
                ++m_pos;
            }
            std::vector<BashWord> delimiter = read_word();
            if (!delimiter.empty()) {
                m_heredocs.emplace_back(delimiter.front().text, strip_tabs);
            }
            return;
        }
        while (peek(0) == '>' || peek(0) == '<' || peek(0) == '&' || peek(0) == '|') {
            ++m_pos;
        }
        if (peek(0) == '-' || std::isdigit(static_cast<unsigned char>(peek(0))) != 0) { // 2>&1, >&-
            if (m_pos > 0 && m_text[m_pos - 1] == '&') {
                while (std::isdigit(static_cast<unsigned char>(peek(0))) != 0 || peek(0) == '-') {
                    ++m_pos;
                }
                return;
            }
        }
        discard_word();
    }

    void discard_word() {
        while (is_blank(peek(0))) {
            ++m_pos;
        }
        if (m_pos < m_text.size() && m_text[m_pos] != '\n') {
            read_word();
        }
    }

    void skip_heredocs() {
        for (const auto& [delimiter, strip_tabs] : m_heredocs) {
            while (m_pos < m_text.size()) {
                const std::size_t end = m_text.find('\n', m_pos);
                std::string line = m_text.substr(m_pos, end == std::string::npos ? std::string::npos : end - m_pos);
                m_pos = end == std::string::npos ? m_text.size() : end + 1;
                ++m_line;
                if (strip_tabs) {
                    line.erase(0, line.find_first_not_of('\t') == std::string::npos ? line.size() : line.find_first_not_of('\t'));
                }
                if (line == delimiter) {
                    break;
                }
            }
        }
        m_heredocs.clear();
    }

    // Applies leading assignments; a command of assignments only changes the script's variables.
    void end_command(BashScript& out) {
        if (m_whole || m_words.empty()) {
            m_words.clear();
            return;
        }
        std::size_t first = 0;
        bool exported = false;
        while (first < m_words.size() &&
               (m_words[first].text == "export" || m_words[first].text == "local" || m_words[first].text == "readonly" ||
                m_words[first].text == "declare" || (first > 0 && m_words[first].text.rfind('-', 0) == 0))) {
            exported = exported || m_words[first].text == "export";
            ++first;
        }
        const bool keyword = first > 0;
        std::vector<std::pair<std::string, BashWord>> assigned;
        while (first < m_words.size()) {
            const std::string& text = m_words[first].text;
            const std::size_t name = identifier_length(text);
            if (name == 0 || name >= text.size() || text[name] != '=') {
                break;
            }
            BashWord value = m_words[first];
            value.text = text.substr(name + 1);
            assigned.emplace_back(text.substr(0, name), value);
            ++first;
        }
        if (first == m_words.size()) {
            for (const auto& [name, value] : assigned) {
                if (value.text == k_array_marker) {
                    continue; // an array, already stored by read_word
                }
                m_vars[name] = Variable{{value.text}, value.unresolved};
                if (exported) {
                    out.exports.emplace_back(name, value);
                }
            }
        } else if (!keyword) {
            // `VAR=x cmd ...`: the assignment is the command's environment, not the script's.
            out.commands.push_back({std::vector<BashWord>(m_words.begin() + static_cast<long>(first), m_words.end()), m_command_line});
            inline_script(out, out.commands.back());
        }
        m_words.clear();
    }

    // `srun ... bash -c '...'`, and `gcloud compute tpus tpu-vm ssh NAME --command "..."` (what ran
    // on the TPU VM): the quoted script is read too, its lines counted from the quote's, with the
    // variables it inherits; what it assigns stays in its own shell.
    void inline_script(BashScript& out, const BashCommand& command) {
        const std::vector<BashWord>& w = command.words;
        const bool gcloud_ssh = !w.empty() && (w.front().text == "gcloud" || ends_with(w.front().text, "/gcloud")) &&
                                std::any_of(w.begin(), w.end(), [](const BashWord& word) { return word.text == "ssh"; });
        for (std::size_t i = 0; i < w.size() && m_depth < 4; ++i) {
            const std::string& shell = w[i].text;
            const bool is_shell = shell == "bash" || shell == "sh" || ends_with(shell, "/bash");
            const BashWord* script = nullptr;
            std::string text;
            if (gcloud_ssh && starts_with(shell, "--command=")) {
                script = &w[i];
                text = shell.substr(std::string_view("--command=").size());
            } else if (gcloud_ssh && shell == "--command" && i + 1 < w.size()) {
                script = &w[i + 1];
                text = script->text;
            } else if (is_shell && i + 2 < w.size() && w[i + 1].text == "-c") {
                script = &w[i + 2];
                text = script->text;
            }
            if (script == nullptr || !script->unresolved.empty()) {
                continue;
            }
            Variables inherited = m_vars;
            Lexer nested(text, inherited, false);
            nested.m_line = script->line;
            nested.m_depth = m_depth + 1;
            BashScript inner = nested.script();
            out.commands.insert(out.commands.end(), inner.commands.begin(), inner.commands.end());
            out.exports.insert(out.exports.end(), inner.exports.begin(), inner.exports.end());
            return;
        }
    }

    std::vector<BashWord> read_word();
    void expand(std::vector<BashWord>& done, BashWord& current, bool quoted);
    void expand_braced(std::vector<BashWord>& done, BashWord& current, bool quoted, const std::string& inner, bool braced = true);
    void append_value(std::vector<BashWord>& done, BashWord& current, const Variable& value, bool quoted, bool each);
    std::string matching(char open, char close);

    static constexpr const char* k_array_marker = "\x01array";

    std::string m_text;
    Variables& m_vars;
    bool m_whole;
    std::size_t m_pos = 0;
    int m_line = 1;
    int m_command_line = 1;
    int m_depth = 0;
    std::vector<BashWord> m_words;
    std::vector<std::pair<std::string, bool>> m_heredocs;
};

std::string Lexer::matching(char open, char close) {
    // m_pos is just past `open`; returns the text up to the matching `close` and steps past it.
    int depth = 1;
    const std::size_t start = m_pos;
    char quote = '\0';
    while (m_pos < m_text.size()) {
        const char c = m_text[m_pos];
        if (c == '\n') {
            ++m_line;
        }
        if (quote != '\0') {
            if (c == '\\' && quote == '"') {
                ++m_pos;
            } else if (c == quote) {
                quote = '\0';
            }
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '\\') {
            ++m_pos;
        } else if (c == open) {
            ++depth;
        } else if (c == close && --depth == 0) {
            ++m_pos;
            return m_text.substr(start, m_pos - 1 - start);
        }
        ++m_pos;
    }
    return m_text.substr(start);
}

void Lexer::append_value(std::vector<BashWord>& done, BashWord& current, const Variable& value, bool quoted, bool each) {
    if (!value.unresolved.empty() && current.unresolved.empty()) {
        current.unresolved = value.unresolved;
    }
    std::vector<std::string> fields;
    // A value that needs running stays one word: how it would split is not known either.
    quoted = quoted || !value.unresolved.empty();
    if (quoted && !each) {
        std::string joined;
        for (const std::string& item : value.items) {
            joined += (joined.empty() ? "" : " ") + item;
        }
        current.text += joined;
        current.line = current.line == 0 ? m_line : current.line;
        return;
    }
    for (const std::string& item : value.items) {
        if (quoted) {
            fields.push_back(item);
            continue;
        }
        // Unquoted, bash splits the value at blanks.
        std::size_t at = 0;
        while (at < item.size()) {
            while (at < item.size() && (is_blank(item[at]) || item[at] == '\n')) {
                ++at;
            }
            const std::size_t start = at;
            while (at < item.size() && !(is_blank(item[at]) || item[at] == '\n')) {
                ++at;
            }
            if (at > start) {
                fields.push_back(item.substr(start, at - start));
            }
        }
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0) {
            done.push_back(current);
            current = BashWord{"", m_line, value.unresolved};
        }
        current.text += fields[i];
    }
}

void Lexer::expand_braced(std::vector<BashWord>& done, BashWord& current, bool quoted, const std::string& inner, bool braced) {
    // NAME or a digit run, an optional [@] [*] [N], an optional :- - := = :+ + and its word.
    std::size_t at = identifier_length(inner);
    if (at == 0) {
        while (at < inner.size() && std::isdigit(static_cast<unsigned char>(inner[at])) != 0) {
            ++at;
        }
    }
    const std::string name = inner.substr(0, at);
    std::string index;
    if (at < inner.size() && inner[at] == '[') {
        const std::size_t close = inner.find(']', at);
        index = close == std::string::npos ? "" : inner.substr(at, close - at + 1);
        at = close == std::string::npos ? inner.size() + 1 : close + 1;
    }
    std::string op;
    if (at < inner.size()) {
        const std::size_t length = inner[at] == ':' ? 2 : 1;
        op = inner.substr(at, length);
        at += length;
    }
    const bool index_ok = index.empty() || index == "[@]" || index == "[*]" ||
                          (index.size() > 2 && index.find_first_not_of("0123456789", 1) == index.size() - 1);
    const bool op_ok = op.empty() || op == "-" || op == "=" || op == "+" || op == ":-" || op == ":=" || op == ":+";
    if (name.empty() || !index_ok || !op_ok || at > inner.size()) {
        current.text += "${" + inner + "}";
        if (current.unresolved.empty()) {
            current.unresolved = "${" + shorten(inner) + "}";
        }
        return;
    }
    const std::string operand = at < inner.size() ? inner.substr(at) : "";
    const auto found = m_vars.find(name);
    const bool set = found != m_vars.end();
    const bool empty = !set || found->second.items.empty() || (found->second.items.size() == 1 && found->second.items.front().empty());
    if (!op.empty() && (op.back() == '-' || op.back() == '=') && (op.front() == ':' ? empty : !set)) {
        Lexer nested(operand, m_vars, true);
        nested.m_line = m_line;
        const BashWord fallback = nested.whole_word();
        const Variable value{{fallback.text}, fallback.unresolved};
        if (op.back() == '=') {
            m_vars[name] = value;
        }
        append_value(done, current, value, quoted, false);
        return;
    }
    if (!op.empty() && op.back() == '+') {
        if (!empty) {
            Lexer nested(operand, m_vars, true);
            const BashWord alternative = nested.whole_word();
            append_value(done, current, Variable{{alternative.text}, alternative.unresolved}, quoted, false);
        }
        return;
    }
    if (!set) {
        current.text += braced ? "${" + inner + "}" : "$" + inner;
        if (current.unresolved.empty()) {
            current.unresolved = std::isdigit(static_cast<unsigned char>(name.front())) != 0
                                     ? "$" + name + " (a script argument with no default)"
                                     : "$" + name + " (set outside the script)";
        }
        return;
    }
    if (index == "[@]" || index == "[*]") {
        append_value(done, current, found->second, quoted, index == "[@]");
    } else if (!index.empty()) {
        const std::string digits = index.substr(1, index.size() - 2);
        const std::size_t item = digits.size() <= 9 ? std::stoul(digits) : std::string::npos;
        const Variable& array = found->second;
        append_value(done, current, Variable{{item < array.items.size() ? array.items[item] : ""}, array.unresolved}, quoted, false);
    } else {
        const Variable& value = found->second;
        append_value(done, current, Variable{{value.items.empty() ? "" : value.items.front()}, value.unresolved}, quoted, false);
    }
}

void Lexer::expand(std::vector<BashWord>& done, BashWord& current, bool quoted) {
    ++m_pos; // the `$`
    const char c = peek(0);
    if (c == '(') {
        const std::size_t start = m_pos - 1;
        ++m_pos;
        matching('(', ')');
        const std::string raw = m_text.substr(start, m_pos - start);
        current.text += raw;
        if (current.unresolved.empty()) {
            current.unresolved = shorten(raw);
        }
    } else if (c == '{') {
        ++m_pos;
        expand_braced(done, current, quoted, matching('{', '}'));
    } else if (is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0) {
        std::string name(1, c);
        ++m_pos;
        if (is_name_start(c)) {
            while (is_name_char(peek(0))) {
                name += peek(0);
                ++m_pos;
            }
        }
        expand_braced(done, current, quoted, name, false);
    } else if (c == '@' || c == '*' || c == '#' || c == '?' || c == '$' || c == '!' || c == '-') {
        ++m_pos;
        current.text += std::string("$") + c;
        if (current.unresolved.empty()) {
            current.unresolved = std::string("$") + c;
        }
    } else {
        current.text += '$';
    }
}

std::vector<BashWord> Lexer::read_word() {
    std::vector<BashWord> done;
    BashWord current{"", m_line, ""};
    bool quoted_any = false;
    while (m_pos < m_text.size()) {
        const char c = m_text[m_pos];
        if (!m_whole && (is_blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == ')')) {
            break;
        }
        if (c == '(' && !m_whole) {
            const std::size_t name_length = identifier_length(current.text);
            const bool append = name_length > 0 && current.text.size() == name_length + 2 &&
                                current.text.compare(name_length, 2, "+=") == 0;
            const bool assign = name_length > 0 && current.text.size() == name_length + 1 && current.text[name_length] == '=';
            if (!done.empty() || !(append || assign)) {
                break;
            }
            // NAME=(a b c): the items are words in their own right.
            ++m_pos;
            Variable array;
            const std::string name = current.text.substr(0, name_length);
            if (append) {
                array = m_vars[name];
            }
            while (m_pos < m_text.size() && m_text[m_pos] != ')') {
                const char d = m_text[m_pos];
                if (is_blank(d) || d == '\n' || (d == '\\' && peek(1) == '\n')) {
                    m_line += d == '\n' || d == '\\' ? 1 : 0;
                    m_pos += d == '\\' ? 2 : 1;
                } else if (d == '#') {
                    const std::size_t end = m_text.find('\n', m_pos);
                    m_pos = end == std::string::npos ? m_text.size() : end;
                } else {
                    const std::size_t before = m_pos;
                    for (const BashWord& item : read_word()) {
                        array.items.push_back(item.text);
                        if (array.unresolved.empty()) {
                            array.unresolved = item.unresolved;
                        }
                    }
                    m_pos += m_pos == before ? 1U : 0U; // `;`, `|`, `<` inside ( ): not a word
                }
            }
            ++m_pos;
            m_vars[name] = array;
            current.text = name + "=" + k_array_marker;
            return {current};
        }
        if (c == '\\') {
            if (peek(1) == '\n') {
                ++m_line;
            } else if (m_pos + 1 < m_text.size()) {
                current.text += m_text[m_pos + 1];
            }
            m_pos += 2;
        } else if (c == '\'') {
            quoted_any = true;
            const std::size_t end = m_text.find('\'', m_pos + 1);
            const std::string inside = m_text.substr(m_pos + 1, end == std::string::npos ? std::string::npos : end - m_pos - 1);
            for (char d : inside) {
                m_line += d == '\n' ? 1 : 0;
            }
            current.text += inside;
            m_pos = end == std::string::npos ? m_text.size() : end + 1;
        } else if (c == '"') {
            quoted_any = true;
            ++m_pos;
            while (m_pos < m_text.size() && m_text[m_pos] != '"') {
                const char d = m_text[m_pos];
                if (d == '\\' && (peek(1) == '$' || peek(1) == '`' || peek(1) == '"' || peek(1) == '\\' || peek(1) == '\n')) {
                    if (peek(1) == '\n') {
                        ++m_line;
                    } else {
                        current.text += peek(1);
                    }
                    m_pos += 2;
                } else if (d == '$') {
                    expand(done, current, true);
                } else if (d == '`') {
                    const std::size_t start = m_pos;
                    const std::size_t end = m_text.find('`', m_pos + 1);
                    m_pos = end == std::string::npos ? m_text.size() : end + 1;
                    current.text += m_text.substr(start, m_pos - start);
                    current.unresolved = current.unresolved.empty() ? shorten(m_text.substr(start, m_pos - start))
                                                                    : current.unresolved;
                } else {
                    m_line += d == '\n' ? 1 : 0;
                    current.text += d;
                    ++m_pos;
                }
            }
            ++m_pos;
        } else if (c == '$') {
            expand(done, current, false);
        } else if (c == '`') {
            const std::size_t start = m_pos;
            const std::size_t end = m_text.find('`', m_pos + 1);
            m_pos = end == std::string::npos ? m_text.size() : end + 1;
            current.text += m_text.substr(start, m_pos - start);
            current.unresolved = current.unresolved.empty() ? shorten(m_text.substr(start, m_pos - start)) : current.unresolved;
        } else {
            m_line += c == '\n' ? 1 : 0;
            current.text += c;
            ++m_pos;
        }
    }
    if (!current.text.empty() || quoted_any || !current.unresolved.empty()) {
        done.push_back(current);
    }
    return done;
}

} // namespace

BashScript split_bash(const std::string& text) {
    Variables vars;
    Lexer lexer(text, vars, false);
    return lexer.script();
}

} // namespace harness
