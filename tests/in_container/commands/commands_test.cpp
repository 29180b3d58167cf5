// The helper's one-shot subcommands as processes: run --request, cancel --scope, probe, pin-proxy, and the
// binary's static linking.
#include "contracts/wire_json.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/fixture.hpp"
#include "policy/hosts_file.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;

std::string write_request(const scratch& dir, const contracts::run_request& request, int mode) {
    const auto path = (dir.path() / "request.json").string();
    std::ofstream(path) << contracts::serialize(request);
    ::chmod(path.c_str(), static_cast<mode_t>(mode));
    return path;
}

TEST_CASE("run --request supervises, prints one report line and unlinks the request before the start") {
    scratch dir;
    auto request = dir.request({"sh", "-c",
                                "test -e " + (dir.path() / "request.json").string() +
                                    " && echo present || echo absent; maka-eval-helper frame '{}'"});
    request.credentials = {{"TOKEN", "secret-value"}};
    const auto path = write_request(dir, request, 0600);
    const auto r = run_process({helper_binary, "run", "--request", path});
    CHECK(r.exit_code == 0);
    const auto report = contracts::parse_session_message(r.out);
    REQUIRE(report.has_value());
    const auto& m = std::get<contracts::report_message>(*report);
    CHECK(m.stdout_text == "{}");
    CHECK(read_text(dir.artifact(true)).starts_with("absent\n"));
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("run --request refuses a file others could read, or one owned by someone else") {
    scratch dir;
    const auto path = write_request(dir, dir.request({"true"}), 0644);
    auto r = run_process({helper_binary, "run", "--request", path});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("mode 0600") != std::string::npos);
    CHECK(std::filesystem::exists(path)); // not read, so not consumed
    if (::geteuid() == 0) {
        ::chmod(path.c_str(), 0600);
        REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
        r = run_process({helper_binary, "run", "--request", path});
        CHECK(r.exit_code == 1);
    }
    CHECK(run_process({helper_binary, "run", "--request", (dir.path() / "absent").string()}).exit_code == 1);
    CHECK(run_process({helper_binary, "run"}).exit_code == 2);
}

TEST_CASE("adopt hands a root-owned 0600 request to a user, and nothing else") {
    scratch dir;
    const auto path = write_request(dir, dir.request({"true"}), 0600);
    CHECK(run_process({helper_binary, "adopt", "--request", path}).exit_code == 2);
    CHECK(run_process({helper_binary, "adopt", "--request", path, "--uid", "x", "--gid", "1"}).exit_code ==
          2);
    const auto link = (dir.path() / "link").string();
    std::filesystem::create_symlink(path, link);
    if (::geteuid() != 0) {
        // Only root can give a file away: the refusal must say why, and leave the file as it was.
        CHECK(run_process({helper_binary, "adopt", "--request", path, "--uid", "1000", "--gid", "1000"})
                  .exit_code == 1);
        return;
    }
    // Never through a symlink, never a file others can read.
    CHECK(run_process({helper_binary, "adopt", "--request", link, "--uid", "1000", "--gid", "1000"})
              .exit_code == 1);
    ::chmod(path.c_str(), 0640);
    CHECK(run_process({helper_binary, "adopt", "--request", path, "--uid", "1000", "--gid", "1000"})
              .exit_code == 1);
    ::chmod(path.c_str(), 0600);
    const auto r = run_process({helper_binary, "adopt", "--request", path, "--uid", "1000", "--gid", "1001"});
    CHECK(r.exit_code == 0);
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    CHECK(info.st_uid == 1000);
    CHECK(info.st_gid == 1001);
    CHECK((info.st_mode & 0777) == 0600);
    // Once given away it is not root's any more: a second adopt (to anyone else) is refused.
    CHECK(run_process({helper_binary, "adopt", "--request", path, "--uid", "0", "--gid", "0"}).exit_code ==
          1);
}

// `run --request` of a TERM-ignoring subject (TERM grace 200 ms), once it has published its scope file.
struct trapped_run {
    explicit trapped_run(scratch& dir)
        : path(write_request(dir, trapped(dir), 0600)), process({helper_binary, "run", "--request", path}) {
        for (int i = 0; i < 500 && !std::filesystem::exists(dir.scope()); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        REQUIRE(std::filesystem::exists(dir.scope()));
    }
    static contracts::run_request trapped(scratch& dir) {
        auto request = dir.request({"sh", "-c", "trap '' TERM; sleep 60"});
        request.term_grace_ms = 200;
        return request;
    }
    // Its report, which must say it was settled, and its exit.
    contracts::report_message settled() {
        const auto line = process.read_line();
        REQUIRE(line);
        const auto report = contracts::parse_session_message(*line);
        REQUIRE(report.has_value());
        const auto out = std::get<contracts::report_message>(*report);
        CHECK(out.settled);
        CHECK(process.wait() == 0);
        return out;
    }
    std::string path;
    child_process process;
};

TEST_CASE("cancel --scope settles the run of another helper and waits for it") {
    scratch dir;
    trapped_run run(dir);
    const auto cancel = run_process({helper_binary, "cancel", "--scope", dir.scope(), "--grace-ms", "10000"});
    INFO(cancel.out, cancel.err);
    CHECK(cancel.exit_code == 0);
    CHECK(cancel.out.find("\"outcome\":\"settled\"") != std::string::npos);
    CHECK(run.settled().reason == "signal:TERM");
    // Nothing left to cancel now.
    const auto again = run_process({helper_binary, "cancel", "--scope", dir.scope()});
    CHECK(again.exit_code == 3);
    CHECK(again.out.find("not-running") != std::string::npos);
}

TEST_CASE("cancel --run-request finds the supervisor by its run when the scope file was deleted") {
    scratch dir;
    trapped_run run(dir);
    REQUIRE(std::filesystem::remove(dir.scope())); // as a root subject can
    const auto without = run_process({helper_binary, "cancel", "--scope", dir.scope(), "--grace-ms", "100"});
    CHECK(without.exit_code == 3); // the file alone no longer says anything
    const auto cancel = run_process(
        {helper_binary, "cancel", "--scope", dir.scope(), "--grace-ms", "10000", "--run-request", run.path});
    CHECK(cancel.exit_code == 0);
    CHECK(cancel.out.find("\"outcome\":\"settled\"") != std::string::npos);
    (void)run.settled();
    const auto again =
        run_process({helper_binary, "cancel", "--scope", dir.scope(), "--run-request", run.path});
    CHECK(again.exit_code == 3);
}

TEST_CASE("probe prints the hello message") {
    const auto r = run_process({helper_binary, "probe"});
    CHECK(r.exit_code == 0);
    const auto message = contracts::parse_session_message(r.out);
    REQUIRE(message.has_value());
    const auto& hello = std::get<contracts::hello_message>(*message);
    char link[256] = {};
    REQUIRE(::readlink("/proc/self/ns/net", link, sizeof link - 1) > 0);
    CHECK(hello.net_namespace == link);
}

// A directory of root's that only root may change, for what pin-proxy trusts (not under /tmp, which anyone
// may write): beside the test binaries, in a root checkout.
struct root_only_dir {
    root_only_dir() {
        std::string pattern = (std::filesystem::current_path() / "pin-test-XXXXXX").string();
        if (::geteuid() == 0 && ::mkdtemp(pattern.data()) != nullptr) {
            path = pattern;
            ::chmod(pattern.c_str(), 0755);
        }
    }
    ~root_only_dir() {
        std::error_code ignored;
        if (!path.empty()) {
            std::filesystem::remove_all(path, ignored);
        }
    }
    root_only_dir(const root_only_dir&) = delete;
    root_only_dir& operator=(const root_only_dir&) = delete;
    [[nodiscard]] bool usable() const {
        // Every directory up to / must be root's and not writable by others, as pin-proxy checks.
        for (auto at = std::filesystem::path(path); !path.empty(); at = at.parent_path()) {
            struct stat info {};
            if (::stat(at.c_str(), &info) != 0 || info.st_uid != 0 ||
                (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
                return false;
            }
            if (at == at.root_path()) {
                return true;
            }
        }
        return false;
    }
    std::filesystem::path path;
};

// The hosts file and the proxy's address file pin-proxy is pointed at, in a root-only directory.
struct pin_files {
    pin_files() {
        if (!dir.usable()) {
            maka_eval::test::skip(
                "pin-proxy's tests need root and a build folder only root may change, up to / (not "
                "under /tmp): " +
                std::filesystem::current_path().string());
        }
    }
    root_only_dir dir;
    std::string hosts = (dir.path / "hosts").string();
    std::string ipv4 = (dir.path / "proxy-ipv4").string();
};

TEST_CASE("pin-proxy rewrites the hosts file in place and reports the pin") {
    const pin_files files;
    const auto& hosts = files.hosts;
    const auto& ipv4 = files.ipv4;
    const std::string before = "127.0.0.1 localhost\n10.0.0.1 maka-eval-mitmproxy\n";
    std::ofstream(hosts) << before;
    std::ofstream(ipv4) << "172.18.0.2\n";
    struct stat old_info {};
    ::stat(hosts.c_str(), &old_info);
    const auto r = run_process({helper_binary, "pin-proxy", "--host", "maka-eval-mitmproxy", "--ipv4-file",
                                ipv4, "--hosts-file", hosts});
    CHECK(r.exit_code == 0);
    CHECK(r.out ==
          "{\"kind\":\"pinned\",\"version\":1,\"ip\":\"172.18.0.2\",\"host\":\"maka-eval-mitmproxy\"}\n");
    CHECK(read_text(hosts) == policy::rewrite_hosts(before, "maka-eval-mitmproxy", "172.18.0.2"));
    struct stat new_info {};
    ::stat(hosts.c_str(), &new_info);
    CHECK(new_info.st_ino == old_info.st_ino); // in place: a bind-mounted /etc/hosts stays attached
}

TEST_CASE("pin-proxy trusts only root's files: a link, a file others may write, a directory not root's") {
    const pin_files files;
    const auto& dir = files.dir;
    const auto& hosts = files.hosts;
    const auto& ipv4 = files.ipv4;
    std::ofstream(hosts) << "127.0.0.1 localhost\n";
    std::ofstream(dir.path / "real-ipv4") << "172.18.0.9\n";
    auto pin = [&] {
        return run_process({helper_binary, "pin-proxy", "--host", "maka-eval-mitmproxy", "--ipv4-file", ipv4,
                            "--hosts-file", hosts});
    };
    std::filesystem::create_symlink(dir.path / "real-ipv4", ipv4);
    auto r = pin();
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(ipv4 + ": a symbolic link") != std::string::npos);
    std::filesystem::remove(ipv4);
    std::ofstream(ipv4) << "172.18.0.9\n";
    ::chmod(ipv4.c_str(), 0666);
    r = pin();
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("not a regular file of root's that only root may change") != std::string::npos);
    ::chmod(ipv4.c_str(), 0644);
    ::chown(dir.path.c_str(), 1000, 1000);
    r = pin();
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(dir.path.string() + ": not a directory of root's") != std::string::npos);
    ::chown(dir.path.c_str(), 0, 0);
    ::chmod(hosts.c_str(), 0666);
    r = pin();
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("cannot pin the proxy in " + hosts) != std::string::npos);
    CHECK(read_text(hosts) == "127.0.0.1 localhost\n");
    ::chmod(hosts.c_str(), 0644);
    CHECK(pin().exit_code == 0);
}

TEST_CASE("pin-proxy refuses a bad host before touching anything, and a missing or malformed address") {
    const pin_files files;
    const auto& hosts = files.hosts;
    const auto& ipv4 = files.ipv4;
    std::ofstream(hosts) << "127.0.0.1 localhost\n";
    std::ofstream(ipv4) << "172.18.0.2\n";
    auto pin = [&](const std::string& host) {
        return run_process(
            {helper_binary, "pin-proxy", "--host", host, "--ipv4-file", ipv4, "--hosts-file", hosts});
    };
    const auto bad_host = pin("foo..bar");
    CHECK(bad_host.exit_code == 1);
    CHECK(bad_host.err.find("Eval egress proxy host is invalid") != std::string::npos);
    std::ofstream(ipv4) << "999.1.1.1\n";
    CHECK(pin("maka-eval-mitmproxy").exit_code == 1);
    std::filesystem::remove(ipv4);
    CHECK(pin("maka-eval-mitmproxy").exit_code == 1);
    CHECK(read_text(hosts) == "127.0.0.1 localhost\n");
}

TEST_CASE("the helper binary is static") {
    const auto r = run_process({"/usr/bin/file", "-L", helper_binary});
    CHECK(r.out.find("statically linked") != std::string::npos);
    const auto ldd = run_process({"/usr/bin/ldd", helper_binary});
    CHECK(ldd.exit_code != 0);
}

// A copy of the helper where the cold install's shell would have written it, executable, and its size.
std::pair<std::string, std::string> incoming_copy(const scratch& dir) {
    const auto copy = (dir.path() / ".maka-eval-incoming").string();
    std::filesystem::copy_file(helper_binary, copy);
    ::chmod(copy.c_str(), 0700);
    return {copy, std::to_string(std::filesystem::file_size(copy))};
}

TEST_CASE("install moves the running binary whole to its name, links maka-eval-helper to it, then runs the "
          "command") {
    scratch dir;
    const auto [copy, size] = incoming_copy(dir);
    const auto place = dir.path() / "made" / "here";
    std::filesystem::create_directories(place);
    ::chmod(place.c_str(), 0700);
    std::filesystem::create_symlink("elsewhere", place / "maka-eval-helper"); // an older build's link
    const auto r = run_process({copy, "install", "--from", copy, "--size", size, "--directory",
                                place.string(), "--name", "helper-1", "--", "--version"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.starts_with("maka-eval-helper "));
    CHECK_FALSE(std::filesystem::exists(copy));
    struct stat info {};
    REQUIRE(::stat((place / "helper-1").c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0755);
    REQUIRE(::stat(place.c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0755);
    CHECK(std::filesystem::read_symlink(place / "maka-eval-helper") == "helper-1");
    CHECK(std::distance(std::filesystem::directory_iterator(place), {}) == 2); // nothing staged left
    // Installed: it runs from its place.
    CHECK(run_process({(place / "maka-eval-helper").string(), "--version"}).out == r.out);
}

TEST_CASE("install leaves nothing half in: an incomplete binary, a link on the way or another file") {
    scratch dir;
    SUBCASE("incomplete (fewer bytes than the relay sent): removed, the command never runs") {
        const auto [copy, size] = incoming_copy(dir);
        const auto r = run_process({copy, "install", "--from", copy, "--size", size + "0", "--directory",
                                    (dir.path() / "d").string(), "--name", "helper-1", "--", "--version"});
        CHECK(r.exit_code == 1);
        CHECK(r.out.empty());
        CHECK(r.err.find("(incomplete)") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(copy));
        CHECK_FALSE(std::filesystem::exists(dir.path() / "d" / "helper-1"));
    }
    SUBCASE("a symbolic link on the way to the directory: refused, removed") {
        const auto [copy, size] = incoming_copy(dir);
        std::filesystem::create_directories(dir.path() / "real");
        std::filesystem::create_directory_symlink(dir.path() / "real", dir.path() / "link");
        const auto r = run_process({copy, "install", "--from", copy, "--size", size, "--directory",
                                    (dir.path() / "link" / "d").string(), "--name", "helper-1"});
        CHECK(r.exit_code == 1);
        CHECK_FALSE(std::filesystem::exists(copy));
        CHECK(std::filesystem::is_empty(dir.path() / "real"));
    }
    SUBCASE("--from names another file than the one running: left as it is") {
        const auto other = (dir.path() / "other").string();
        std::ofstream(other) << "not the helper";
        const auto r = run_process({helper_binary, "install", "--from", other, "--size", "14", "--directory",
                                    (dir.path() / "d").string(), "--name", "helper-1"});
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("is not the binary running") != std::string::npos);
        CHECK(read_text(other) == "not the helper");
        CHECK_FALSE(std::filesystem::exists(dir.path() / "d"));
    }
    SUBCASE("usage: every option, an absolute directory, one plain name that is not the link's") {
        const std::string d = (dir.path() / "d").string();
        for (const auto& argv : std::vector<std::vector<std::string>>{
                 {"install", "--from", "x", "--size", "1", "--directory", d},
                 {"install", "--from", "x", "--size", "1k", "--directory", d, "--name", "h"},
                 {"install", "--from", "x", "--size", "1", "--directory", "rel", "--name", "h"},
                 {"install", "--from", "x", "--size", "1", "--directory", d, "--name", "a/b"},
                 {"install", "--from", "x", "--size", "1", "--directory", d, "--name", ".."},
                 {"install", "--from", "x", "--size", "1", "--directory", d, "--name", "maka-eval-helper"},
                 {"install", "--from", "x", "--size", "1", "--directory", d, "--name", "h", "--bogus",
                  "1"}}) {
            std::vector<std::string> full{helper_binary};
            full.insert(full.end(), argv.begin(), argv.end());
            CHECK(run_process(full).exit_code == 2);
        }
    }
}

} // namespace
