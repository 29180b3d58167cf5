// maka-eval-bench: the measurements the benchmark driver (bench.py) cannot take from outside.
//   bare-exec CONTAINER N — N engine execs of `true` through the same Engine API client the relay uses
//                           (exec create, exec start attached, stream to EOF, exit code): the baseline a
//                           trial's overhead is compared against. Prints one JSON array of milliseconds.
//   exchange-exec CONTAINER N — N execs of a shell that says a line, reads one and answers it, each timed
//                           from exec create to the answer: the least a trial's exec must do (its helper's
//                           hello out, the run in, the report out), without the relay, orchestrator or
//                           subject. Prints one JSON array of milliseconds.
//   projection N          — N projections of a 64 KiB carrier (noise, then the frame last). Prints JSON.
#include "contracts/defaults.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/wire_json.hpp"
#include "relay/cli/options.hpp"
#include "relay/engine/docker_api.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace {

using namespace maka_eval;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

boost::asio::awaitable<void> bare_execs(relay::docker_api& api, std::string container, int n,
                                        boost::json::array& out) {
    for (int i = 0; i < n; ++i) {
        const auto begun = clock_type::now();
        std::string id;
        // No braces or conditions inside co_await: GCC 12 miscompiles them (see relay/trial.cpp).
        relay::exec_spec spec;
        spec.cmd.emplace_back("true");
        auto stream = co_await api.exec(container, std::move(spec), id);
        if (!stream) {
            throw std::runtime_error(stream.error().message);
        }
        (void)co_await (*stream)->read_rest(1U << 20U);
        boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
        while (true) {
            auto code = co_await api.exec_exit_code(id);
            if (!code) {
                throw std::runtime_error(code.error().message);
            }
            if (*code) {
                break;
            }
            timer.expires_after(std::chrono::milliseconds(1));
            co_await timer.async_wait(boost::asio::use_awaitable);
        }
        out.emplace_back(ms_since(begun));
    }
}

boost::asio::awaitable<void> exchange_execs(relay::docker_api& api, std::string container, int n,
                                            boost::json::array& out) {
    for (int i = 0; i < n; ++i) {
        const auto begun = clock_type::now();
        std::string id;
        relay::exec_spec spec;
        spec.cmd = {"sh", "-c", "echo hello; read line; echo \"$line\""};
        spec.attach_stdin = true;
        auto stream = co_await api.exec(container, std::move(spec), id);
        if (!stream) {
            throw std::runtime_error(stream.error().message);
        }
        auto hello = co_await (*stream)->read_line(1U << 16U);
        std::string request = "run\n";
        (void)co_await (*stream)->write(std::move(request));
        auto answer = co_await (*stream)->read_line(1U << 16U);
        if (!hello || *hello != "hello" || !answer || *answer != "run") {
            throw std::runtime_error("exchange-exec: unexpected answer");
        }
        out.emplace_back(ms_since(begun));
        (*stream)->close_stdin();
        (void)co_await (*stream)->read_rest(1U << 16U);
    }
}

} // namespace

int main(int argc, char** argv) {
    const std::string command = argc > 1 ? argv[1] : "";
    if ((command == "bare-exec" || command == "exchange-exec") && argc == 4) {
        boost::asio::io_context context;
        // The engine as the relay finds it: DOCKER_HOST and, for TLS, DOCKER_TLS_VERIFY/DOCKER_CERT_PATH.
        auto engine = relay::resolve_engine_endpoint(std::nullopt, &relay::process_env);
        auto opened =
            engine
                ? relay::docker_api::open(context.get_executor(), *engine,
                                          std::chrono::milliseconds(contracts::defaults::engine_timeout_ms))
                : boost::system::result<relay::docker_api, relay::relay_error>(engine.error());
        if (!opened) {
            std::cerr << "bench_tool: " << opened.error().message << "\n";
            return 1;
        }
        auto& api = *opened;
        boost::json::array out;
        auto work = command == "bare-exec" ? bare_execs(api, argv[2], std::stoi(argv[3]), out)
                                           : exchange_execs(api, argv[2], std::stoi(argv[3]), out);
        boost::asio::co_spawn(context, std::move(work), [](std::exception_ptr e) {
            if (e) {
                std::rethrow_exception(e);
            }
        });
        context.run();
        std::cout << contracts::to_wire(out) << "\n";
        return 0;
    }
    if (command == "projection" && argc == 3) {
        const std::string token = "0123456789abcdef0123456789abcdef";
        const std::string frame = contracts::encode_frame(token, std::string(1024, 'p')).value();
        std::string carrier;
        while (carrier.size() + frame.size() + 81 <= contracts::carrier_limit_bytes) {
            carrier += std::string(80, 'n') + "\n";
        }
        carrier += frame;
        const int n = std::stoi(argv[2]);
        std::size_t sink = 0;
        const auto begun = clock_type::now();
        for (int i = 0; i < n; ++i) {
            sink += contracts::project(carrier, token, true).stdout_text.size();
        }
        const double ms = ms_since(begun);
        const boost::json::object out{
            {"carrierBytes", carrier.size()},
            {"runs", n},
            {"usPerProjection", ms * 1000.0 / n},
            {"mibPerSecond", static_cast<double>(carrier.size()) * n / (ms / 1000.0) / (1 << 20)},
            {"check", sink == static_cast<std::size_t>(n) * 1024}};
        std::cout << contracts::to_wire(out) << "\n";
        return 0;
    }
    std::cerr << "usage: maka-eval-bench bare-exec CONTAINER N | exchange-exec CONTAINER N | projection N\n";
    return 2;
}
