#include "util/process.hpp"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

using namespace harness;

namespace {

/// Opens /dev/null at `fd` without close-on-exec, as a caller's stray descriptor would be.
struct StrayDescriptor {
    int fd;
    explicit StrayDescriptor(int wanted) : fd(wanted) {
        const int null = ::open("/dev/null", O_RDONLY);
        REQUIRE(null >= 0);
        REQUIRE(::dup2(null, fd) == fd);
        ::close(null);
    }
    ~StrayDescriptor() { ::close(fd); }
    StrayDescriptor(const StrayDescriptor&) = delete;
    StrayDescriptor& operator=(const StrayDescriptor&) = delete;
};

/// A shell that names which of the stray descriptors it can still see, then "end".
Command descriptor_probe() {
    return Command{
        {"/bin/sh", "-c", "for n in 5 9 12 37; do [ -e /proc/$$/fd/$n ] && echo open $n; done; echo end"}, current_environment(), {}};
}

} // namespace

TEST_CASE("a child starts with stdin, stdout and stderr only, whatever the caller left open", "[process]") {
    const StrayDescriptor five(5);
    const StrayDescriptor nine(9);
    const StrayDescriptor twelve(12);
    const StrayDescriptor high(37);
    SECTION("run_command") {
        const ExitStatus status = run_command(descriptor_probe());
        CHECK(status.ok());
        CHECK(status.output == "end\n");
    }
    SECTION("RunningProcess") {
        RunningProcess child(descriptor_probe());
        std::string output;
        std::optional<ExitStatus> status;
        for (int i = 0; i < 500 && !status; ++i) {
            output += child.read_output();
            status = child.poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        output += child.read_output();
        REQUIRE(status);
        CHECK(status->ok());
        CHECK(output == "end\n");
    }
    SECTION("the harness's own descriptors stay open") {
        CHECK(::fcntl(five.fd, F_GETFD) >= 0);
        CHECK((::fcntl(high.fd, F_GETFD) & FD_CLOEXEC) == 0);
    }
}

TEST_CASE("a program that cannot be started is still an error with stray descriptors open", "[process]") {
    const StrayDescriptor twelve(12);
    CHECK_THROWS(run_command(Command{{"/nonexistent/program"}, current_environment(), {}}));
}
