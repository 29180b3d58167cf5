// Where a command is looked for: the helper's exec candidates (as sh would) and the relay's first executable.
#include "posix/executable_search.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::posix;

TEST_CASE("a command is looked for as sh would: a path as given, a name along PATH") {
    CHECK(exec_candidates("/bin/true", "/usr/bin") == std::vector<std::string>{"/bin/true"});
    CHECK(exec_candidates("./run.sh", "/usr/bin") == std::vector<std::string>{"./run.sh"});
    CHECK(exec_candidates("tool", "/a:/b") == std::vector<std::string>{"/a/tool", "/b/tool"});
    // PATH unset or empty: sh's default.
    CHECK(exec_candidates("tool", nullptr) == std::vector<std::string>{"/bin/tool", "/usr/bin/tool"});
    CHECK(exec_candidates("tool", "") == std::vector<std::string>{"/bin/tool", "/usr/bin/tool"});
}

TEST_CASE("find_executable takes the first candidate that is an executable regular file") {
    namespace fs = std::filesystem;
    const auto root = fs::temp_directory_path() / ("maka-path-" + std::to_string(::getpid()));
    for (const char* dir : {"a", "b", "c"}) {
        fs::create_directories(root / dir);
    }
    fs::create_directories(root / "a" / "tool");         // a directory of that name: not it
    std::ofstream(root / "b" / "tool") << "#!/bin/sh\n"; // not executable: not it
    std::ofstream(root / "c" / "tool") << "#!/bin/sh\n";
    fs::permissions(root / "c" / "tool", fs::perms::owner_all);
    const std::string path =
        (root / "a").string() + ":" + (root / "b").string() + ":" + (root / "c").string();
    CHECK(find_executable("tool", path.c_str()) == (root / "c" / "tool").string());
    CHECK_FALSE(find_executable("absent", path.c_str()));
    fs::remove_all(root);
}

} // namespace
