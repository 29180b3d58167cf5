// Test support for the helper's integration tests (see fixture.hpp).
#include "in_container/fixture.hpp"

#include "in_container/process/process_table.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>

namespace maka_eval::test {

scratch::scratch() {
    std::string pattern = (std::filesystem::temp_directory_path() / "maka-helper-test-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
    std::filesystem::create_directories(root_ / "scope");
}

scratch::~scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
}

std::string scratch::artifact(bool stdout_stream) const {
    return artifacts() + (stdout_stream ? "/maka-subject.stdout.txt" : "/maka-subject.stderr.txt");
}

contracts::run_request scratch::request(std::vector<std::string> argv) const {
    contracts::run_request r;
    r.argv = std::move(argv);
    r.result_token = result_token;
    r.scope_path = scope();
    r.artifacts_dir = artifacts();
    // On the host, as for the local backend: the machine's state directory is shared by every test running
    // in parallel, and a clean start would stop another test's subjects.
    r.keep_leftovers = true;
    const std::string helper_dir = std::filesystem::path(helper_binary).parent_path().string();
    r.environment = {{"PATH", helper_dir + ":/usr/bin:/bin"}};
    return r;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool process_alive(pid_t pid) {
    const auto status = in_container::read_status(pid);
    return status && in_container::is_live(*status);
}

bool group_alive(pid_t pgid) {
    for (const auto& p : in_container::all_processes()) {
        if (p.pgid == pgid && in_container::is_live(p)) {
            return true;
        }
    }
    return false;
}

bool eventually(const std::function<bool()>& condition, int timeout_ms) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        if (condition()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
}

session::session(const std::vector<std::string>& argv) : process(argv) {
    const auto line = process.read_line();
    REQUIRE(line);
    auto message = contracts::parse_session_message(*line);
    REQUIRE(message.has_value());
    REQUIRE(std::holds_alternative<contracts::hello_message>(*message));
    hello = std::get<contracts::hello_message>(*message);
}

void session::start(const contracts::run_request& request) {
    REQUIRE(process.send(contracts::serialize(request)));
}

std::optional<contracts::session_message> session::next(int timeout_ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        const auto line = process.read_line(static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
        if (!line) {
            return std::nullopt;
        }
        auto message = contracts::parse_session_message(*line);
        INFO("line: " << *line);
        REQUIRE(message.has_value());
        if (std::holds_alternative<contracts::heartbeat_message>(*message)) {
            ++heartbeats;
            continue;
        }
        if (auto* output = std::get_if<contracts::output_message>(&*message); output && output->size > 0) {
            auto bytes = process.read_bytes(static_cast<std::size_t>(output->size), timeout_ms);
            REQUIRE(bytes);
            output->data = std::move(*bytes);
        }
        return *message;
    }
}

} // namespace maka_eval::test
