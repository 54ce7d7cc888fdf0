#include "test_context.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/zstd_stream.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <catch2/catch.hpp>
#include <functional>
#include <sys/resource.h>
#include <sys/stat.h>

using namespace harness;
using harness::test::TempDir;

namespace {

void make_tree(const fs::path& root) {
    fs::create_directories(root / "logs");
    fs::create_directories(root / "scripts");
    fs::create_directories(root / "empty");
    write_file_atomic(root / "run.yaml", "name: tiny\n");
    write_file_atomic(root / "kineto_trace_0.json", std::string(300000, 'x') + "{\"traceEvents\":[]}\n");
    write_file_atomic(root / "logs" / "rank0.log", "hello\n");
    write_file_atomic(root / "scripts" / "launch.sh", "#!/bin/sh\necho hi\n", true);
    write_file_atomic(root / "a-b", "sorts between a dir and its files\n");
    write_file_atomic(root / "zero", "");
    write_file_atomic(root / "logs" / "r\xc3\xa9sum\xc3\xa9 \"quoted\".log", "non-ASCII name\n");
}

struct ListedEntry {
    std::string path;
    unsigned type = 0;
    unsigned perm = 0;
    std::int64_t mtime = 0;
    std::int64_t uid = -1;
    std::int64_t gid = -1;
    std::string uname;
    std::string gname;
};

std::vector<ListedEntry> list_archive(const fs::path& file) {
    archive* a = archive_read_new();
    archive_read_support_filter_zstd(a);
    archive_read_support_format_tar(a);
    REQUIRE(archive_read_open_filename(a, file.c_str(), 65536) == ARCHIVE_OK);
    std::vector<ListedEntry> entries;
    archive_entry* entry = nullptr;
    while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
        ListedEntry listed;
        listed.path = archive_entry_pathname(entry);
        listed.type = archive_entry_filetype(entry);
        listed.perm = archive_entry_perm(entry);
        listed.mtime = archive_entry_mtime(entry);
        listed.uid = archive_entry_uid(entry);
        listed.gid = archive_entry_gid(entry);
        listed.uname = archive_entry_uname(entry) != nullptr ? archive_entry_uname(entry) : "";
        listed.gname = archive_entry_gname(entry) != nullptr ? archive_entry_gname(entry) : "";
        entries.push_back(listed);
    }
    CHECK(archive_filter_code(a, 0) == ARCHIVE_FILTER_ZSTD);
    archive_read_free(a);
    return entries;
}

/// Writes a .tar.zst the way an attacker would: any entry, any header.
struct CraftedEntry {
    std::string path;
    unsigned type = AE_IFREG;
    std::string content;
    std::string link;       // symlink target
    std::string hardlink;   // hard link target
    std::int64_t zeros = 0; // a file of this many zero bytes instead of `content`
};

CraftedEntry file(std::string path, std::string content) {
    CraftedEntry entry;
    entry.path = std::move(path);
    entry.content = std::move(content);
    return entry;
}
CraftedEntry zero_file(std::string path, std::int64_t size) {
    CraftedEntry entry;
    entry.path = std::move(path);
    entry.zeros = size;
    return entry;
}
CraftedEntry special(std::string path, unsigned type) {
    CraftedEntry entry;
    entry.path = std::move(path);
    entry.type = type;
    return entry;
}
CraftedEntry symlink_to(std::string path, std::string target) {
    CraftedEntry entry = special(std::move(path), AE_IFLNK);
    entry.link = std::move(target);
    return entry;
}
CraftedEntry hardlink_to(std::string path, std::string target) {
    CraftedEntry entry;
    entry.path = std::move(path);
    entry.hardlink = std::move(target);
    return entry;
}

void write_crafted(const fs::path& file, const std::vector<CraftedEntry>& entries) {
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_zstd(a);
    REQUIRE(archive_write_open_filename(a, file.c_str()) == ARCHIVE_OK);
    const std::string zeros(1 << 20, '\0');
    for (const CraftedEntry& crafted : entries) {
        archive_entry* entry = archive_entry_new();
        archive_entry_set_pathname(entry, crafted.path.c_str());
        archive_entry_set_filetype(entry, crafted.type);
        archive_entry_set_perm(entry, 0644);
        if (!crafted.link.empty()) {
            archive_entry_set_symlink(entry, crafted.link.c_str());
        }
        if (!crafted.hardlink.empty()) {
            archive_entry_set_hardlink(entry, crafted.hardlink.c_str());
        }
        if (crafted.type == AE_IFCHR) {
            archive_entry_set_rdevmajor(entry, 1);
            archive_entry_set_rdevminor(entry, 3);
        }
        const bool regular = crafted.type == AE_IFREG && crafted.hardlink.empty();
        const std::int64_t size = crafted.zeros > 0 ? crafted.zeros : static_cast<std::int64_t>(crafted.content.size());
        archive_entry_set_size(entry, regular ? size : 0);
        REQUIRE(archive_write_header(a, entry) >= ARCHIVE_WARN);
        if (regular && crafted.zeros > 0) {
            for (std::int64_t left = crafted.zeros; left > 0;) {
                const auto n = static_cast<std::size_t>(std::min<std::int64_t>(left, static_cast<std::int64_t>(zeros.size())));
                REQUIRE(archive_write_data(a, zeros.data(), n) == static_cast<la_ssize_t>(n));
                left -= static_cast<std::int64_t>(n);
            }
        } else if (regular) {
            archive_write_data(a, crafted.content.data(), crafted.content.size());
        }
        archive_entry_free(entry);
    }
    REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
}

std::size_t count_entries(const fs::path& dir) {
    std::size_t count = 0;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
        ++count;
    }
    return count;
}

} // namespace

TEST_CASE("packing the same tree twice gives the same bytes", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "first.tar.zst", 2);
    const std::string first = sha256_file(dir.path() / "first.tar.zst");

    SECTION("again, unchanged") { write_tar_zst(dir.path() / "run", "bundle", dir.path() / "second.tar.zst", 2); }
    SECTION("after new mtimes and permissions that do not matter") {
        const auto later = fs::file_time_type::clock::now() + std::chrono::hours(5);
        for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "run")) {
            fs::last_write_time(entry.path(), later);
        }
        fs::permissions(dir.path() / "run" / "run.yaml", fs::perms::owner_read | fs::perms::owner_write);
        fs::permissions(dir.path() / "run" / "scripts" / "launch.sh", fs::perms::owner_all);
        fs::permissions(dir.path() / "run" / "logs", fs::perms::owner_all | fs::perms::group_write);
        write_tar_zst(dir.path() / "run", "bundle", dir.path() / "second.tar.zst", 2);
    }
    SECTION("on another number of threads") {
        write_tar_zst(dir.path() / "run", "bundle", dir.path() / "second.tar.zst", 1);
        CHECK(sha256_file(dir.path() / "second.tar.zst") == first);
        write_tar_zst(dir.path() / "run", "bundle", dir.path() / "second.tar.zst", 7);
    }
    CHECK(sha256_file(dir.path() / "second.tar.zst") == first);
}

TEST_CASE("a change of content or of the executable bit changes the bytes", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "first.tar.zst", 1);
    SECTION("content") { write_file_atomic(dir.path() / "run" / "logs" / "rank0.log", "hellO\n"); }
    SECTION("executable bit") { fs::permissions(dir.path() / "run" / "run.yaml", fs::perms::owner_exec, fs::perm_options::add); }
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "second.tar.zst", 1);
    CHECK(sha256_file(dir.path() / "second.tar.zst") != sha256_file(dir.path() / "first.tar.zst"));
}

TEST_CASE("entries are sorted by path with fixed owner, time and modes", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "out.tar.zst", 2);
    const std::vector<ListedEntry> entries = list_archive(dir.path() / "out.tar.zst");
    std::vector<std::string> paths;
    for (const ListedEntry& entry : entries) {
        paths.push_back(entry.path);
        CHECK(entry.mtime == k_archive_mtime);
        CHECK(entry.uid == 0);
        CHECK(entry.gid == 0);
        CHECK(entry.uname.empty());
        CHECK(entry.gname.empty());
        if (entry.type == AE_IFDIR) {
            CHECK(entry.perm == 0755);
        } else {
            CHECK(entry.type == AE_IFREG);
            CHECK(entry.perm == (entry.path == "bundle/scripts/launch.sh" ? 0755u : 0644u));
        }
    }
    CHECK(paths == std::vector<std::string>{"bundle/", "bundle/a-b", "bundle/empty/", "bundle/kineto_trace_0.json", "bundle/logs/",
                                            "bundle/logs/rank0.log", "bundle/logs/r\xc3\xa9sum\xc3\xa9 \"quoted\".log",
                                            "bundle/run.yaml", "bundle/scripts/", "bundle/scripts/launch.sh", "bundle/zero"});
}

TEST_CASE("a packed tree unpacks to the same files", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "out.tar.zst", 2);
    extract_tar_zst_safely(dir.path() / "out.tar.zst", dir.path() / "scratch" / "unpacked");
    const fs::path unpacked = dir.path() / "scratch" / "unpacked" / "bundle";
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "run")) {
        const fs::path relative = fs::relative(entry.path(), dir.path() / "run");
        INFO(relative.string());
        if (entry.is_directory()) {
            CHECK(fs::is_directory(unpacked / relative));
            continue;
        }
        CHECK(read_file(unpacked / relative) == read_file(entry.path()));
        const bool executable = (fs::status(entry.path()).permissions() & fs::perms::owner_exec) != fs::perms::none;
        CHECK(((fs::status(unpacked / relative).permissions() & fs::perms::owner_exec) != fs::perms::none) == executable);
    }
    CHECK(count_entries(unpacked) == count_entries(dir.path() / "run"));
}

TEST_CASE("links and special files in the source are refused and leave no archive", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    std::string name;
    SECTION("a symbolic link") {
        fs::create_symlink("/etc/passwd", dir.path() / "run" / "logs" / "sneaky");
        name = "sneaky";
    }
    SECTION("a FIFO") {
        REQUIRE(::mkfifo((dir.path() / "run" / "pipe").c_str(), 0644) == 0);
        name = "pipe";
    }
    try {
        write_tar_zst(dir.path() / "run", "bundle", dir.path() / "out.tar.zst", 1);
        FAIL("packed a tree holding " << name);
    } catch (const HarnessError& error) {
        CHECK_THAT(error.what(), Catch::Contains(name) && Catch::Contains("refusing to pack"));
    }
    CHECK(count_entries(dir.path()) == count_entries(dir.path() / "run") + 1);
}

TEST_CASE("the archive cannot be written inside the tree it packs", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    CHECK_THROWS_AS(write_tar_zst(dir.path() / "run", "bundle", dir.path() / "run" / "out.tar.zst", 1), HarnessError);
    CHECK_THROWS_AS(write_tar_zst(dir.path() / "run", "a/b", dir.path() / "out.tar.zst", 1), HarnessError);
    CHECK_THROWS_AS(write_tar_zst(dir.path() / "run", "..", dir.path() / "out.tar.zst", 1), HarnessError);
    CHECK_FALSE(fs::exists(dir.path() / "run" / "out.tar.zst"));
    CHECK_FALSE(fs::exists(dir.path() / "out.tar.zst"));
}

TEST_CASE("unpacking refuses crafted archives before writing anything", "[archive]") {
    TempDir dir;
    const fs::path archive = dir.path() / "evil.tar.zst";
    const fs::path dest = dir.path() / "scratch" / "dest";
    const fs::path escape = dir.path() / "escaped";
    ExtractLimits limits;
    std::string why;
    // A harmless file first: the check must see the whole archive before writing any of it.
    std::vector<CraftedEntry> entries{file("bundle/ok.txt", "fine")};
    SECTION("an absolute path") {
        entries.push_back(file(escape.string(), "owned"));
        why = "an absolute path";
    }
    SECTION("a path with ..") {
        entries.push_back(file("bundle/../../escaped", "owned"));
        why = "leaves the target directory";
    }
    SECTION("a symbolic link") {
        entries.push_back(symlink_to("bundle/link", escape.string()));
        why = "a symbolic link";
    }
    SECTION("a symbolic link that stays inside") {
        entries.push_back(symlink_to("bundle/link", "ok.txt"));
        why = "a symbolic link";
    }
    SECTION("a hard link") {
        entries.push_back(hardlink_to("bundle/hard", "bundle/ok.txt"));
        why = "a hard link";
    }
    SECTION("a device node") {
        entries.push_back(special("bundle/null", AE_IFCHR));
        why = "a device node";
    }
    SECTION("a FIFO") {
        entries.push_back(special("bundle/fifo", AE_IFIFO));
        why = "a FIFO";
    }
    SECTION("a duplicate path") {
        entries.push_back(file("bundle/ok.txt", "replaced"));
        why = "a duplicate path";
    }
    SECTION("a path under a file") {
        entries.push_back(file("bundle/ok.txt/x", "x"));
        why = "under the file";
    }
    SECTION("a decompression bomb, by ratio") {
        entries.push_back(zero_file("bundle/zeros", std::int64_t{32} << 20));
        limits.ratio_floor = 1 << 20;
        why = "decompression bomb";
    }
    SECTION("a decompression bomb, by size") {
        entries.push_back(zero_file("bundle/zeros", std::int64_t{3} << 20));
        limits.max_bytes = 2 << 20;
        why = "expands past the limit";
    }
    SECTION("too many entries") {
        for (int i = 0; i < 20; ++i) {
            entries.push_back(file("bundle/f" + std::to_string(i), "x"));
        }
        limits.max_entries = 10;
        why = "more than 10 entries";
    }
    write_crafted(archive, entries);
    try {
        extract_tar_zst_safely(archive, dest, limits);
        FAIL("unpacked an archive with " << why);
    } catch (const HarnessError& error) {
        CHECK_THAT(error.what(), Catch::Contains(why));
    }
    CHECK_FALSE(fs::exists(dest));
    CHECK_FALSE(fs::exists(escape));
    CHECK_FALSE(fs::exists(dir.path() / "scratch" / "escaped"));
}

TEST_CASE("the bomb limits leave ordinary archives alone", "[archive]") {
    TempDir dir;
    // Very compressible, but small: under the ratio floor.
    write_crafted(dir.path() / "logs.tar.zst", {zero_file("bundle/blank.log", std::int64_t{4} << 20)});
    extract_tar_zst_safely(dir.path() / "logs.tar.zst", dir.path() / "dest");
    CHECK(fs::file_size(dir.path() / "dest" / "bundle" / "blank.log") == std::uint64_t{4} << 20);
}

TEST_CASE("unpacking wants a fresh directory and a whole zstd archive", "[archive]") {
    TempDir dir;
    make_tree(dir.path() / "run");
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "out.tar.zst", 1);

    SECTION("an existing target is refused and kept") {
        fs::create_directories(dir.path() / "dest");
        write_file_atomic(dir.path() / "dest" / "mine", "keep me");
        CHECK_THROWS_WITH(extract_tar_zst_safely(dir.path() / "out.tar.zst", dir.path() / "dest"), Catch::Contains("already exists"));
        CHECK(read_file(dir.path() / "dest" / "mine") == "keep me");
    }
    SECTION("a truncated archive") {
        const std::string bytes = read_file(dir.path() / "out.tar.zst");
        write_file_atomic(dir.path() / "cut.tar.zst", bytes.substr(0, bytes.size() / 2));
        CHECK_THROWS_AS(extract_tar_zst_safely(dir.path() / "cut.tar.zst", dir.path() / "dest"), HarnessError);
        CHECK_FALSE(fs::exists(dir.path() / "dest"));
    }
    SECTION("an uncompressed tar") {
        archive* a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        REQUIRE(archive_write_open_filename(a, (dir.path() / "plain.tar").c_str()) == ARCHIVE_OK);
        archive_entry* entry = archive_entry_new();
        archive_entry_set_pathname(entry, "x");
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, 0);
        archive_write_header(a, entry);
        archive_entry_free(entry);
        archive_write_close(a);
        archive_write_free(a);
        CHECK_THROWS_WITH(extract_tar_zst_safely(dir.path() / "plain.tar", dir.path() / "dest"),
                          Catch::Contains("not zstd-compressed"));
        CHECK_FALSE(fs::exists(dir.path() / "dest"));
    }
    SECTION("not an archive at all") {
        write_file_atomic(dir.path() / "junk.tar.zst", "this is not an archive");
        CHECK_THROWS_AS(extract_tar_zst_safely(dir.path() / "junk.tar.zst", dir.path() / "dest"), HarnessError);
        CHECK_FALSE(fs::exists(dir.path() / "dest"));
    }
}

TEST_CASE("sha256_file agrees with sha256_hex", "[archive]") {
    TempDir dir;
    std::string content;
    for (int i = 0; i < 300000; ++i) {
        content += static_cast<char>(i * 7 % 251);
    }
    const fs::path file = dir.write("bytes", content);
    CHECK(sha256_file(file) == sha256_hex(content));
    CHECK(sha256_file(dir.write("empty", "")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK_THROWS_AS(sha256_file(dir.path() / "absent"), HarnessError);
}

TEST_CASE("the writer reports what each entry holds and writes on finish only", "[archive]") {
    TempDir dir;
    const fs::path out = dir.path() / "out.tar.zst";
    const fs::path source = dir.write("data.txt", "hello\n");
    {
        TarZstWriter writer(out, 2);
        writer.add_directory("top");
        const ArchivedContent file = writer.add_file("top/data.txt", source);
        CHECK(file.size == 6);
        CHECK(file.sha256 == sha256_hex("hello\n"));
        const ArchivedContent bytes = writer.add_bytes("top/made.json", "{}\n");
        CHECK(bytes.size == 3);
        CHECK(bytes.sha256 == sha256_hex("{}\n"));
        CHECK_FALSE(fs::exists(out));
        const ArchivedContent archive = writer.finish();
        CHECK(archive.size == fs::file_size(out));
        CHECK(archive.sha256 == sha256_file(out));
    }
    const std::vector<ListedEntry> entries = list_archive(out);
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].path == "top/");
    CHECK(entries[2].path == "top/made.json");
    CHECK(count_entries(dir.path()) == 2);
}

TEST_CASE("a writer dropped before finish leaves nothing", "[archive]") {
    TempDir dir;
    {
        TarZstWriter writer(dir.path() / "out.tar.zst", 1);
        writer.add_bytes("x", std::string(3 << 20, 'x'));
    }
    CHECK(count_entries(dir.path()) == 0);
}

TEST_CASE("finish without replace keeps a file that appeared meanwhile", "[archive]") {
    TempDir dir;
    const fs::path out = dir.path() / "out.tar.zst";
    {
        TarZstWriter writer(out, 1);
        writer.add_bytes("x", "x");
        write_file_atomic(out, "someone else's");
        CHECK_THROWS_WITH(writer.finish(false), Catch::Contains("exists"));
    }
    CHECK(read_file(out) == "someone else's");
    CHECK(count_entries(dir.path()) == 1);
}

TEST_CASE("a file whose size is not what it said is refused", "[archive]") {
    TempDir dir;
    // procfs and sysfs files are the ready-made liars: /proc says 0 bytes and has more, a sysfs
    // attribute says 4096 and has fewer. Either is what a file written during packing looks like.
    std::string source;
    std::string why;
    SECTION("it grew") {
        source = "/proc/self/status";
        why = "grew while it was packed";
    }
    SECTION("it shrank") {
        source = "/sys/kernel/mm/transparent_hugepage/enabled";
        why = "shrank while it was packed";
        if (!fs::exists(source) || fs::file_size(source) <= read_file(source).size()) {
            WARN("no sysfs attribute to test with: skipped");
            return;
        }
    }
    {
        TarZstWriter writer(dir.path() / "out.tar.zst", 1);
        CHECK_THROWS_WITH(writer.add_file("liar", source), Catch::Contains(why));
        CHECK_THROWS_WITH(writer.add_bytes("after", "x"), Catch::Contains("broken by an earlier error"));
    }
    CHECK(count_entries(dir.path()) == 0);
}

TEST_CASE("the worker count does not change the bytes", "[archive]") {
    TempDir dir;
    std::string text;
    std::uint64_t state = 88172645463325252ULL;
    while (text.size() < (std::size_t{5} << 20)) { // five compression jobs
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text += "{\"name\": \"k" + std::to_string(state % 997) + "\", \"ts\": " + std::to_string(state % 100000000) + "},\n";
    }
    std::string first;
    for (const int workers : {1, 2, 5, 16}) {
        const fs::path out = dir.path() / ("out-" + std::to_string(workers) + ".tar.zst");
        TarZstWriter writer(out, workers);
        writer.add_bytes("trace.json", text);
        const std::string sha = writer.finish().sha256;
        first = first.empty() ? sha : first;
        INFO(workers << " workers");
        CHECK(sha == first);
    }
    CHECK(zstd_workers(0) >= 1);
    CHECK(zstd_workers(0) <= k_zstd_max_workers);
    CHECK(zstd_workers(1000) == k_zstd_max_workers);
}

// Run by hand: unit_tests "packing a 1 GB file keeps memory bounded" (under /usr/bin/time -v for the peak RSS of the whole process).
TEST_CASE("packing a 1 GB file keeps memory bounded", "[.slow]") {
    TempDir dir;
    fs::create_directories(dir.path() / "run");
    {
        std::FILE* out = std::fopen((dir.path() / "run" / "kineto_trace_0.json").c_str(), "wb");
        REQUIRE(out != nullptr);
        std::string chunk;
        std::uint64_t state = 88172645463325252ULL;
        for (std::uint64_t written = 0; written < (std::uint64_t{1} << 30); written += chunk.size()) {
            chunk.clear();
            for (int i = 0; i < 8192; ++i) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                chunk += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_" + std::to_string(state % 1000) +
                         "\",\"ts\":" + std::to_string(state % 100000000) + ",\"dur\":" + std::to_string(state % 977) + "},\n";
            }
            REQUIRE(std::fwrite(chunk.data(), 1, chunk.size(), out) == chunk.size());
        }
        std::fclose(out);
    }
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    const auto start = std::chrono::steady_clock::now();
    write_tar_zst(dir.path() / "run", "bundle", dir.path() / "out.tar.zst", 2);
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    WARN("packed " << fs::file_size(dir.path() / "run" / "kineto_trace_0.json") << " bytes into "
                   << fs::file_size(dir.path() / "out.tar.zst") << " in " << seconds << " s; peak RSS before " << before.ru_maxrss
                   << " KiB, after " << after.ru_maxrss << " KiB");
    CHECK(after.ru_maxrss < 128 * 1024);
}
