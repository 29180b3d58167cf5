// Starting the helper, the step docker and the bridge share (helper_start.hpp): which remedy follows which
// failed start, and the attempts' loop over scripted starts.
#include "relay/backends/helper_start.hpp"

#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;
namespace asio = boost::asio;

start_attempt exited(int code, bool streamed = false) {
    start_attempt a;
    a.exit_code = code;
    a.said = "sh: not found";
    a.streamed = streamed;
    return a;
}

TEST_CASE("helper start: the remedy for each failed start") {
    start_history docker{true, false, false, false};
    CHECK(remedy_for(exited(127), docker) == start_remedy::install);
    CHECK(remedy_for(exited(126), docker) == start_remedy::install);     // the engine's upload sets the mode
    CHECK(remedy_for(exited(1, true), docker) == start_remedy::install); // no shell for the streamed install
    CHECK(remedy_for(exited(1), docker) == start_remedy::none);
    start_attempt refused;
    refused.identity_refused = true;
    CHECK(remedy_for(refused, docker) == start_remedy::as_subject);
    docker.installed = true;
    CHECK(remedy_for(exited(127), docker) == start_remedy::none); // put in already: nothing more to try
    start_history bridge{true, false, false, true};
    CHECK(remedy_for(exited(126), bridge) == start_remedy::make_executable);
    bridge.made_executable = true;
    CHECK(remedy_for(exited(126), bridge) == start_remedy::install);
    start_history mounted{false, false, false, true};
    CHECK(remedy_for(exited(127), mounted) == start_remedy::none); // the user's helper is theirs to fix
}

// Runs start_helper over `attempts` in order; what each remedy was, and the outcome's error text.
struct scripted {
    std::vector<start_remedy> applied;
    std::string error;
    bool opened = false;
};
scripted run(std::vector<start_attempt> attempts, start_history history) {
    scripted out;
    asio::io_context io;
    std::size_t next = 0;
    const auto attempt = [&]() -> asio::awaitable<start_attempt> {
        co_return std::move(attempts.at(next++));
    };
    const auto apply = [&](start_remedy r) -> asio::awaitable<boost::system::result<void, relay_error>> {
        out.applied.push_back(r);
        history.installed = history.installed || r == start_remedy::install;
        co_return boost::system::result<void, relay_error>{};
    };
    auto done = asio::co_spawn(
        io, [&]() { return start_helper(attempt, apply, history, "in container c"); }, asio::use_future);
    io.run();
    auto result = done.get();
    out.opened = result.has_value();
    out.error = result ? "" : result.error().message;
    return out;
}

TEST_CASE("helper start: not found, installed once, still not found: reported with its exit and output") {
    std::vector<start_attempt> attempts;
    attempts.push_back(exited(127));
    attempts.push_back(exited(127));
    const auto out = run(std::move(attempts), {true, false, false, false});
    CHECK_FALSE(out.opened);
    REQUIRE(out.applied.size() == 1);
    CHECK(out.applied[0] == start_remedy::install);
    CHECK(out.error == "maka-eval-helper did not start in container c (exit 127): sh: not found");
}

TEST_CASE("helper start: refused as root, then not found as the subject: two remedies, then the report") {
    std::vector<start_attempt> attempts;
    attempts.emplace_back().identity_refused = true;
    attempts.push_back(exited(127));
    attempts.push_back(exited(127));
    const auto out = run(std::move(attempts), {true, false, false, false});
    REQUIRE(out.applied.size() == 2);
    CHECK(out.applied[0] == start_remedy::as_subject);
    CHECK(out.applied[1] == start_remedy::install);
    CHECK(out.error.find("(exit 127)") != std::string::npos);
}

TEST_CASE("helper start: a final error ends it at once, with no remedy") {
    std::vector<start_attempt> attempts;
    attempts.push_back(
        start_attempt::refused(relay_error{relay_errc::environment, "the reader is not ours"}));
    const auto out = run(std::move(attempts), {true, false, false, false});
    CHECK(out.applied.empty());
    CHECK(out.error == "the reader is not ours");
}

} // namespace
