// maka-eval-test-orchestrator: the scriptable orchestrator (misbehaving_orchestrator.hpp) as a process, for
// the relay's integration tests.
//
//   MAKA_EVAL_RELAY_TOKEN=T maka-eval-test-orchestrator [--scenario NAME] [--no-capture] [-e K=V]...
//       [--credential NAME]... [--raw-execute JSON] [--hold] [--delay-ms N] [--verify-delay-ms N] -- CMD
//       [ARG...]
// Prints "port N" once listening, then the transcript as one JSON object when the exchange is over.
#include "contracts/wire_json.hpp"
#include "relay/misbehaving_orchestrator.hpp"

#include <cstdlib>
#include <iostream>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

int main(int argc, char** argv) {
    using namespace maka_eval;
    test::orchestrator_script script;
    script.request.result_token = "0123456789abcdef0123456789abcdef";
    int i = 1;
    for (; i < argc && std::string_view(argv[i]) != "--"; ++i) {
        const std::string_view arg = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : "";
        auto pair = [](std::string_view kv) {
            const auto eq = kv.find('=');
            return std::pair<std::string, std::string>(kv.substr(0, eq), kv.substr(eq + 1));
        };
        if (arg == "--scenario") {
            script.act = test::misbehaviour_from(value).value_or(test::misbehaviour::none);
            ++i;
        } else if (arg == "--no-capture") {
            script.request.capture_stdout = false;
        } else if (arg == "-e") {
            script.request.environment.push_back(pair(value));
            ++i;
        } else if (arg == "--credential") {
            // The value comes from this process's environment, so no secret is on any command line.
            const char* secret = std::getenv(value);
            script.request.credentials.emplace_back(value, secret != nullptr ? secret : "");
            ++i;
        } else if (arg == "--raw-execute") {
            script.raw_execute = value;
            ++i;
        } else if (arg == "--hold") {
            script.hold = true;
        } else if (arg == "--delay-ms") {
            script.during_run_delay_ms = static_cast<std::uint32_t>(std::stoul(value));
            ++i;
        } else if (arg == "--verify-delay-ms") {
            script.verify_delay_ms = static_cast<std::uint32_t>(std::stoul(value));
            ++i;
        }
    }
    for (++i; i < argc; ++i) {
        script.request.argv.emplace_back(argv[i]);
    }
    script.on_event = [](std::string_view what) { std::cout << "event " << what << std::endl; };
    const char* token = std::getenv("MAKA_EVAL_RELAY_TOKEN");
    boost::asio::io_context context;
    relay::orchestrator_peer orchestrator(context.get_executor(), token != nullptr ? token : "");
    std::cout << "port " << orchestrator.port() << std::endl;
    boost::asio::co_spawn(context, test::serve_script(orchestrator, script),
                          [](std::exception_ptr error, relay::transcript t) {
                              boost::json::object out;
                              out["ready"] = t.ready ? boost::json::value(*t.ready) : nullptr;
                              out["executed"] = t.executed ? boost::json::value(*t.executed) : nullptr;
                              out["failure"] = error ? std::string("exception") : t.failure;
                              out["verifySent"] = t.verify_sent;
                              out["received"] = static_cast<std::uint64_t>(t.received.size());
                              std::cout << contracts::to_wire(out) << std::endl;
                          });
    context.run();
    return 0;
}
