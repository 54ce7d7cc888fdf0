#include "provenance/secret_scrub.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"
#include "util/walk.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what, int error) {
    throw HarnessError(fmt::format("{}: cannot scrub secrets: {}: {}", file.string(), what, std::strerror(error)));
}

/// The rewritten copy beside the original: removed unless it replaced the original.
class TempFile {
public:
    explicit TempFile(const fs::path& beside) : m_original(beside) {
        const fs::path dir = beside.has_parent_path() ? beside.parent_path() : fs::path(".");
        m_path = (dir / ("." + beside.filename().string() + ".scrub.XXXXXX")).string();
        m_fd = ::mkstemp(m_path.data());
        if (m_fd < 0) {
            fail(beside, "create a temporary file", errno);
        }
    }
    ~TempFile() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        if (!m_committed) {
            ::unlink(m_path.c_str());
        }
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    void write(const std::string& data) {
        if (const int error_number = write_fully(m_fd, data.data(), data.size()); error_number != 0) {
            fail(m_original, "write", error_number);
        }
    }

    void replace_original(mode_t mode) {
        if (::fchmod(m_fd, mode) != 0 || ::fsync(m_fd) != 0) {
            fail(m_original, "write", errno);
        }
        const int fd = m_fd;
        m_fd = -1;
        if (::close(fd) != 0) {
            fail(m_original, "write", errno);
        }
        if (::rename(m_path.c_str(), m_original.c_str()) != 0) {
            fail(m_original, "replace", errno);
        }
        m_committed = true;
    }

private:
    fs::path m_original;
    std::string m_path;
    int m_fd = -1;
    bool m_committed = false;
};

class InputFile {
public:
    explicit InputFile(const fs::path& file) : m_fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) {
        if (m_fd < 0) {
            fail(file, "open", errno);
        }
    }
    ~InputFile() { ::close(m_fd); }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    int fd() const { return m_fd; }

private:
    int m_fd;
};

/// The length of the longest tail of `text` that is the start (not the whole) of a secret.
std::size_t partial_secret_tail(std::string_view text, const std::vector<std::string>& secrets) {
    const std::size_t longest = secrets.empty() ? 0 : secrets.front().size();
    for (std::size_t length = std::min(text.size(), longest > 0 ? longest - 1 : 0); length > 0; --length) {
        const std::string_view tail = text.substr(text.size() - length);
        for (const std::string& secret : secrets) {
            if (secret.size() > length && secret.compare(0, length, tail) == 0) {
                return length;
            }
        }
    }
    return 0;
}

} // namespace

void SecretScrubber::add(std::string_view value) {
    if (value.size() < k_min_length) {
        return;
    }
    std::vector<std::string> spellings{std::string(value)};
    const std::string quoted = json_string(value);
    if (quoted.compare(1, quoted.size() - 2, value) != 0) {
        spellings.push_back(quoted.substr(1, quoted.size() - 2));
    }
    for (std::string& spelling : spellings) {
        if (std::find(m_secrets.begin(), m_secrets.end(), spelling) == m_secrets.end()) {
            m_secrets.push_back(std::move(spelling));
        }
    }
    std::stable_sort(m_secrets.begin(), m_secrets.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::size_t SecretScrubber::consume(std::string& pending, bool at_end, std::string& out) const {
    // A secret starting at or past `limit` could still be completed by the next chunk.
    const std::size_t kept_back = at_end ? 0 : partial_secret_tail(pending, m_secrets);
    const std::size_t limit = pending.size() > kept_back ? pending.size() - kept_back : 0;
    std::vector<std::size_t> next(m_secrets.size());
    for (std::size_t i = 0; i < m_secrets.size(); ++i) {
        next[i] = pending.find(m_secrets[i]);
    }
    std::size_t pos = 0;
    std::size_t count = 0;
    while (pos < limit) {
        std::size_t best = std::string::npos;
        std::size_t which = 0;
        for (std::size_t i = 0; i < m_secrets.size(); ++i) {
            if (next[i] != std::string::npos && next[i] < pos) {
                next[i] = pending.find(m_secrets[i], pos);
            }
            if (next[i] < best) { // strictly: at one position the longer secret, listed first, wins
                best = next[i];
                which = i;
            }
        }
        if (best >= limit) {
            out.append(pending, pos, limit - pos);
            pos = limit;
            break;
        }
        out.append(pending, pos, best - pos);
        out += k_redacted;
        pos = best + m_secrets[which].size(); // may pass `limit`: the whole match was in `pending`
        ++count;
    }
    pending.erase(0, pos);
    return count;
}

std::string SecretScrubber::scrub(std::string_view text, std::size_t* replaced) const {
    std::string pending(text);
    std::string out;
    out.reserve(text.size());
    const std::size_t count = consume(pending, true, out);
    if (replaced != nullptr) {
        *replaced += count;
    }
    return out;
}

Json SecretScrubber::scrub_json(const Json& value, std::size_t* replaced) const {
    if (value.is_string()) {
        return Json(scrub(value.as_string(), replaced));
    }
    if (value.is_array()) {
        Json::Array out;
        for (const Json& item : value.as_array()) {
            out.push_back(scrub_json(item, replaced));
        }
        return Json(std::move(out));
    }
    if (value.is_object()) {
        Json::Object out;
        for (const auto& [key, item] : value.as_object()) {
            out[scrub(key, replaced)] = scrub_json(item, replaced);
        }
        return Json(std::move(out));
    }
    return value;
}

std::size_t SecretScrubber::scrub_file(const fs::path& file, std::size_t chunk_bytes) const {
    struct stat info {};
    if (::lstat(file.c_str(), &info) != 0) {
        fail(file, "stat", errno);
    }
    if (!S_ISREG(info.st_mode)) {
        throw HarnessError(fmt::format("{}: cannot scrub secrets: not a regular file", file.string()));
    }
    if (m_secrets.empty()) {
        return 0;
    }
    const InputFile in(file);
    TempFile temp(file);
    std::string chunk(std::max<std::size_t>(chunk_bytes, 1), '\0');
    std::string pending;
    std::string out;
    std::size_t count = 0;
    for (bool at_end = false; !at_end;) {
        const ssize_t n = ::read(in.fd(), chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail(file, "read", errno);
        }
        at_end = n == 0;
        pending.append(chunk, 0, static_cast<std::size_t>(n));
        count += consume(pending, at_end, out);
        temp.write(out);
        out.clear();
    }
    if (count > 0) {
        temp.replace_original(info.st_mode & 07777);
    }
    return count;
}

std::size_t SecretScrubber::scrub_json_file(const fs::path& file) const {
    if (m_secrets.empty()) {
        return 0;
    }
    Json parsed;
    try {
        parsed = Json::parse(read_file(file));
    } catch (const std::runtime_error&) {
        return scrub_file(file);
    }
    std::size_t count = 0;
    const Json scrubbed = scrub_json(parsed, &count);
    if (count > 0) {
        write_file_atomic(file, scrubbed.dump());
    }
    return count;
}

std::size_t SecretScrubber::scrub_tree(const fs::path& dir) const {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(dir, ec))) {
        return 0;
    }
    const Tree tree = walk_tree(dir);
    if (tree.error) {
        throw HarnessError(fmt::format("{}: cannot scrub secrets: cannot list: {}", dir.string(), tree.error.message()));
    }
    std::size_t count = 0;
    for (const TreeEntry& entry : tree.entries) {
        if (entry.type == fs::file_type::regular) {
            count += scrub_file(entry.path);
        }
    }
    return count;
}

std::string StreamScrubber::feed(std::string_view chunk) {
    m_pending.append(chunk);
    std::string out;
    m_replaced += m_secrets.consume(m_pending, false, out);
    return out;
}

std::string StreamScrubber::finish() {
    std::string out;
    m_replaced += m_secrets.consume(m_pending, true, out);
    return out;
}

SecretScrubber run_secrets(const EnvironmentMap& environment, const Environment& job_env,
                           const std::vector<std::string>& secret_names) {
    SecretScrubber secrets;
    for (const auto& [name, value] : environment) {
        if (is_secret_name(name)) {
            secrets.add(value);
        }
    }
    for (const auto& [name, value] : job_env) {
        if (is_secret_name(name) && value != k_redacted) {
            secrets.add(value);
        }
    }
    for (const std::string& name : secret_names) {
        if (!is_identifier(name)) {
            throw input_error(fmt::format("--secret {}: not an environment variable name", enquote(name)));
        }
        const auto found = environment.find(name);
        if (found == environment.end()) {
            throw input_error(fmt::format("--secret {}: not set in the environment; export it, or drop the option", name));
        }
        if (found->second.size() < SecretScrubber::k_min_length) {
            throw input_error(fmt::format("--secret {}: its value is shorter than {} characters, too short to scrub without "
                                          "erasing ordinary words",
                                          name, SecretScrubber::k_min_length));
        }
        secrets.add(found->second);
    }
    return secrets;
}

Environment secret_job_environment(const Environment& job_env, const EnvironmentMap& environment) {
    Environment out;
    std::vector<std::string> missing;
    for (const auto& [name, value] : job_env) {
        if (!is_secret_name(name)) {
            continue;
        }
        if (value != k_redacted) {
            out.emplace_back(name, value);
        } else if (const auto found = environment.find(name); found != environment.end()) {
            out.emplace_back(name, found->second);
        } else {
            missing.push_back(name);
        }
    }
    if (!missing.empty()) {
        std::vector<std::string> exports;
        for (const std::string& name : missing) {
            exports.push_back(fmt::format("export {}=...", name));
        }
        throw input_error(fmt::format("the card's env holds {} as {} (a bundle never keeps a secret): export {} with the "
                                      "value to use, then run again:\n  {}",
                                      join(missing, ", "), k_redacted, missing.size() == 1 ? "it" : "them", join(exports, "\n  ")));
    }
    return out;
}

} // namespace harness
