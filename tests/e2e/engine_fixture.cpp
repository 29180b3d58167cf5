// Test support for the end-to-end tests on a real Docker engine (see engine_fixture.hpp).
#include "e2e/engine_fixture.hpp"

#include "relay/support/exit_codes.hpp"
#include "relay/trial_fixture.hpp"

#include <csignal>
#include <cstdlib>
#include <string_view>
#include <unistd.h>

#include <doctest/doctest.h>

namespace maka_eval::test {

std::string docker_cli() {
    for (const char* path : {"/usr/bin/docker", "/usr/local/bin/docker"}) {
        if (::access(path, X_OK) == 0) {
            return path;
        }
    }
    return "docker";
}

std::string container_helper() {
    const char* other = std::getenv("MAKA_EVAL_TEST_HELPER");
    return other != nullptr && *other != '\0' ? std::string(other) : helper_binary;
}

void require_engine() {
    const char* enabled = std::getenv("MAKA_EVAL_E2E");
    if (enabled == nullptr || std::string_view(enabled) != "1") {
        std::exit(77); // skipped: no engine prepared for this run
    }
}

process_result docker(std::vector<std::string> args, int timeout_ms, const std::string& engine) {
    if (!engine.empty()) {
        args.insert(args.begin(), {"-H", engine});
    }
    args.insert(args.begin(), docker_cli());
    return run_process(args, "", std::nullopt, timeout_ms);
}

container::container(std::vector<std::string> run_args, const std::string& image,
                     const std::vector<std::string>& command, std::string engine_host)
    : engine(std::move(engine_host)) {
    static int counter = 0;
    name = "maka-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    std::vector<std::string> args{"run", "-d", "--name", name};
    args.insert(args.end(), run_args.begin(), run_args.end());
    args.push_back(image);
    args.insert(args.end(), command.begin(), command.end());
    const auto r = docker(args, 30000, engine);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
}

container::~container() {
    (void)docker({"rm", "-f", name}, 30000, engine);
}

process_result container::exec(const std::string& script, const std::string& user) const {
    return docker({"exec", "-u", user, name, "sh", "-c", script}, 30000, engine);
}

std::vector<std::string> container::relay_args(std::vector<std::string> more) const {
    more.insert(more.begin(), {"--env", "docker:" + name, "--helper", container_helper()});
    return more;
}

std::function<std::string()> container::scope() const {
    return [this] { return exec("cat /logs/agent/.maka-eval-*.pid 2>/dev/null").out; };
}

bool container::running() const {
    return docker({"inspect", "-f", "{{.State.Running}}", name}, 30000, engine).out.starts_with("true");
}

bool container::has_process(const std::string& command_line, bool prefix) const {
    // A zombie is dead (its args show as "[name]" in BusyBox ps, so it never matches a command line).
    const auto r = exec("ps -o stat,args | grep -v '^ *Z' | sed 's/^ *[^ ]* *//'");
    REQUIRE(r.exit_code == 0);
    std::string_view rest = r.out;
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        while (!line.empty() && line.back() == ' ') {
            line.remove_suffix(1);
        }
        if (line == command_line || (prefix && line.starts_with(command_line))) {
            return true;
        }
    }
    return false;
}

bool container::no_process_soon(const std::string& marker, bool prefix) const {
    return eventually([&] { return !has_process(marker, prefix); }, 5000);
}

std::vector<std::string> in_container(std::vector<std::string> scenario, const std::string& script) {
    return subject(std::move(scenario), script, in_container_helper);
}

void cancel_settles_the_whole_tree(const container& c, const std::vector<std::string>& relay_env,
                                   int sleep_base, std::optional<relay_user> as) {
    const std::string daemon = "sleep " + std::to_string(sleep_base);
    const std::string subject_sleep = "sleep " + std::to_string(sleep_base + 1);
    trial t(in_container({}, "trap '' TERM; setsid sh -c 'trap \"\" TERM; exec " + daemon + "' & " +
                                 subject_sleep),
            c.relay_args({"--term-grace-ms", "300"}), relay_env, base_env(), as);
    t.wait_running(c.scope());
    REQUIRE(eventually([&] { return c.has_process(daemon); }));
    t.signal(SIGTERM);
    const auto o = t.finish();
    CHECK(o.exit_code == relay::exit_cancelled);
    CHECK(executed_of(o).at("exitCode").as_int64() == 124);
    CHECK(c.no_process_soon(daemon));
    CHECK(c.no_process_soon(subject_sleep));
    CHECK(c.running());
    CHECK(c.exec("ls /logs/agent").out.empty()); // the scope file is gone too
}

void killed_relay_leaves_nothing(const container& c, const std::vector<std::string>& relay_env,
                                 int sleep_base, std::optional<relay_user> as) {
    const std::string subject_sleep = "sleep " + std::to_string(sleep_base);
    trial t(in_container({}, subject_sleep), c.relay_args({"--term-grace-ms", "500"}), relay_env, base_env(),
            as);
    t.wait_running(c.scope());
    REQUIRE(c.has_process("/.maka-eval/helper-", true));
    t.signal(SIGKILL);
    (void)t.finish(10000);
    CHECK(c.no_process_soon(subject_sleep));
    CHECK(c.no_process_soon("/.maka-eval/helper-", true));
    CHECK(c.running());
}

int engine_calls(const std::string& log) {
    const auto at = log.rfind("engineCalls=");
    REQUIRE(at != std::string::npos);
    return std::stoi(log.substr(at + std::string_view("engineCalls=").size()));
}

} // namespace maka_eval::test
