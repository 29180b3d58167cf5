// A credential leaves nothing of itself in the relay's memory once its trial is over: the relay's own `run`
// runs in this process (the local backend, this build's helper), with a canary credential given as a user
// gives one (--credential NAME, its value in the environment), and afterwards every writable mapping of this
// process (heap, stacks, the environment, anonymous maps) is read through /proc/self/mem and searched.
//
// The canary is never held whole by the test except where the relay reads it: it is made at random and kept
// XOR-masked; the environment entry the relay reads is the one place it is spelled out, and the relay must
// wipe that too. This executable links the relay's wiping heap, as maka-eval-relay does.
#include "relay/cli/commands.hpp"
#include "support/sanitizers.hpp"
#include "support/skip.hpp"
#ifdef MAKA_EVAL_SECRET_MEMORY_ON_DOCKER
#include "e2e/engine_fixture.hpp"
#endif

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

namespace {

constexpr unsigned char mask = 0xa5;

// The canary, masked: `size` hex digits.
struct masked_canary {
    std::vector<unsigned char> bytes;
};

masked_canary make_canary(std::size_t size) {
    std::random_device random;
    masked_canary canary;
    constexpr std::string_view digits = "0123456789abcdef";
    for (std::size_t i = 0; i < size; ++i) {
        canary.bytes.push_back(static_cast<unsigned char>(digits[random() % 16]) ^ mask);
    }
    return canary;
}

struct region {
    std::uintptr_t from;
    std::uintptr_t to;
    std::string name;
};

std::vector<region> writable_regions() {
    std::vector<region> out;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range;
        std::string permissions;
        std::string offset;
        std::string device;
        std::string inode;
        std::string name;
        fields >> range >> permissions >> offset >> device >> inode;
        std::getline(fields, name);
        if (permissions.size() < 2 || permissions[1] != 'w' || name.find("[vvar]") != std::string::npos) {
            continue;
        }
        const auto dash = range.find('-');
        out.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                       std::stoull(range.substr(dash + 1), nullptr, 16), name});
    }
    return out;
}

// Where the canary is in this process's writable memory, as "region+offset" (none: empty).
std::vector<std::string> places_of(const masked_canary& canary) {
    const int memory = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    REQUIRE(memory >= 0);
    const auto first = static_cast<unsigned char>(canary.bytes[0] ^ mask);
    std::vector<std::string> found;
    for (const auto& r : writable_regions()) {
        const std::size_t size = r.to - r.from;
        // Read into a mapping of its own (itself writable, and searched in turn: it only ever holds copies).
        void* copy = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(copy != MAP_FAILED);
        const auto got = ::pread(memory, copy, size, static_cast<off_t>(r.from));
        const auto* bytes = static_cast<const unsigned char*>(copy);
        const std::size_t have = got > 0 ? static_cast<std::size_t>(got) : 0;
        for (std::size_t at = 0; at + canary.bytes.size() <= have; ++at) {
            const void* hit = std::memchr(bytes + at, first, have - at - canary.bytes.size() + 1);
            if (hit == nullptr) {
                break;
            }
            at = static_cast<std::size_t>(static_cast<const unsigned char*>(hit) - bytes);
            std::size_t same = 1;
            while (same < canary.bytes.size() && (bytes[at + same] ^ mask) == canary.bytes[same]) {
                ++same;
            }
            if (same == canary.bytes.size()) {
                std::ostringstream where;
                where << (r.name.empty() ? std::string(" [anonymous]") : r.name) << "+0x" << std::hex << at;
                found.push_back(where.str());
            }
        }
        ::munmap(copy, size);
    }
    ::close(memory);
    return found;
}

// `backend`: run's arguments that choose it (the local backend and this build's helper, or a container).
void trial_leaves_nothing(std::size_t size, const std::vector<std::string>& backend) {
    const masked_canary canary = make_canary(size);
    // The environment entry, spelled out in a buffer of the test's own (putenv keeps the pointer): where a
    // user's shell would have put it.
    static std::array<char, 128> entry{};
    constexpr std::string_view name = "MAKA_EVAL_TEST_CANARY=";
    std::memcpy(entry.data(), name.data(), name.size());
    for (std::size_t i = 0; i < canary.bytes.size(); ++i) {
        entry[name.size() + i] = static_cast<char>(canary.bytes[i] ^ mask);
    }
    REQUIRE(::putenv(entry.data()) == 0);
    REQUIRE_FALSE(places_of(canary).empty()); // the search finds it where it is

    std::vector<std::string_view> args{"run", "--quiet"};
    args.insert(args.end(), backend.begin(), backend.end());
    for (const std::string_view more :
         {"--credential", "MAKA_EVAL_TEST_CANARY", "--", "sh", "-c", "test -n \"$MAKA_EVAL_TEST_CANARY\""}) {
        args.push_back(more);
    }
    const int code = maka_eval::relay::run_cli(args);
    CHECK(code == 0); // the subject saw its credential

    const auto places = places_of(canary);
    INFO("the canary credential is still at: " << [&] {
        std::string all;
        for (const auto& p : places) {
            all += p + " ";
        }
        return all;
    }());
    CHECK(places.empty());
    CHECK(std::getenv("MAKA_EVAL_TEST_CANARY") == nullptr);
}

} // namespace

// 40 digits live in the heap (longer than a string's inline buffer); 12 fit inline, in whatever holds the
// string object (a vector's storage, a coroutine's frame, a stack frame).
#ifndef MAKA_EVAL_SECRET_MEMORY_ON_DOCKER
TEST_CASE("after a trial with a credential, the relay's memory holds nothing of it") {
    if (maka_eval::test::under_address_sanitizer) {
        maka_eval::test::skip(maka_eval::test::memory_scan_needs_release);
    }
    const std::vector<std::string> local{"--helper", MAKA_EVAL_HELPER_BINARY};
    SUBCASE("a 40-character credential") {
        trial_leaves_nothing(40, local);
    }
    SUBCASE("a 12-character credential") {
        trial_leaves_nothing(12, local);
    }
}
#else
// The same through the engine: the `run` line written into the exec's stream, the engine's answers parsed.
TEST_CASE("after a trial in a container with a credential, the relay's memory holds nothing of it") {
    maka_eval::test::require_engine();
    if (maka_eval::test::under_address_sanitizer) {
        maka_eval::test::skip(maka_eval::test::memory_scan_needs_release);
    }
    const maka_eval::test::container c;
    SUBCASE("a 40-character credential") {
        trial_leaves_nothing(40, c.relay_args());
    }
    SUBCASE("a 12-character credential") {
        trial_leaves_nothing(12, c.relay_args());
    }
}
#endif
