// Once the subject runs, the helper holds a credential's value only in its masker's table (docs/security.md,
// "Credentials in the relay's memory"): read as root through /proc/PID/mem (the helper is non-dumpable, so
// only a reader with CAP_SYS_PTRACE gets in), every writable mapping of the session holds the value exactly
// once. The `run` line it came in, its parse, the subject's environment as it was built and handed to exec
// are gone.
#include "in_container/fixture.hpp"
#include "support/sanitizers.hpp"
#include "support/skip.hpp"

#include <cstdint>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;

// How many times `what` is in the writable memory of process `pid`.
std::size_t copies_in(pid_t pid, const std::string& what) {
    const std::string proc = "/proc/" + std::to_string(pid);
    const int memory = ::open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(memory >= 0);
    std::ifstream maps(proc + "/maps");
    std::string line;
    std::size_t copies = 0;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range;
        std::string permissions;
        fields >> range >> permissions;
        if (permissions.size() < 2 || permissions[1] != 'w' || line.find("[vvar]") != std::string::npos) {
            continue;
        }
        const auto dash = range.find('-');
        const auto from = std::stoull(range.substr(0, dash), nullptr, 16);
        const auto size = std::stoull(range.substr(dash + 1), nullptr, 16) - from;
        std::string bytes(size, '\0');
        const auto got = ::pread(memory, bytes.data(), size, static_cast<off_t>(from));
        bytes.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
        for (auto at = bytes.find(what); at != std::string::npos; at = bytes.find(what, at + 1)) {
            ++copies;
        }
    }
    ::close(memory);
    return copies;
}

} // namespace

TEST_CASE("once the subject runs, the helper holds a credential only in its masker's table") {
    require_root("reading a non-dumpable helper's memory needs CAP_SYS_PTRACE");
    if (under_address_sanitizer) {
        skip(memory_scan_needs_release);
    }
    std::random_device random;
    std::string value = "canary-";
    for (int i = 0; i < 32; ++i) {
        value += "0123456789abcdef"[random() % 16];
    }
    // Environments of many sizes: a buffer that grows leaves a copy behind only at some (a string built by
    // appends once left one with 400 more bytes of environment, and none with 0–200 or 800–1600).
    for (std::size_t filler = 0; filler < 4096; filler += 64) {
        CAPTURE(filler);
        const scratch dir;
        session s;
        // The subject prints a line, which the helper can only pass on once its table is built, then waits.
        auto request = dir.request({"sh", "-c", "echo ready; exec sleep 60"});
        request.credentials = {{"KEY", value}};
        request.environment.emplace_back("FILLER", std::string(filler, 'x'));
        request.follow = true;
        s.start(request);
        bool ready = false;
        while (!ready) {
            auto message = s.next(30000);
            REQUIRE(message);
            if (const auto* output = std::get_if<contracts::output_message>(&*message)) {
                ready = output->data.find("ready") != std::string::npos;
            }
        }
        CHECK(copies_in(s.process.pid(), value) == 1);
        s.process.close_stdin(); // the relay gone: the helper settles the subject and ends
        CHECK(s.process.wait() != -1);
    }
}
