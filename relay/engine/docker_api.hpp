// A small Docker Engine API client: the calls the docker backend needs, over the engine's socket.
//
// The engine is where engine_endpoint says: a unix socket, plain TCP, or mutual TLS (engine_tls). Every
// request opens its own connection (this keeps no state to go stale when the engine restarts). The API
// version is negotiated once from /version when the engine refuses ours. Exec streams are "hijacked" HTTP
// connections carrying the multiplexed stdout/stderr framing; `exec_stream` decodes it and can half-close
// stdin. Every request has a deadline (--engine-timeout-ms): an engine that accepts a connection and then
// never answers fails the call with a clear error instead of holding the trial.
#pragma once

#include "relay/engine/engine_endpoint.hpp"
#include "relay/engine/engine_replies.hpp"
#include "relay/engine/engine_tls.hpp"
#include "relay/engine/exec_stream.hpp"
#include "relay/support/error.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

namespace boost::asio::ssl {
class context;
}

namespace maka_eval::relay {

namespace asio = boost::asio;

struct docker_response {
    int status = 0;
    std::string body;
    std::string api_version; // the engine's Api-Version header: every Docker engine sends it
};

struct exec_spec {
    std::vector<std::string> cmd;
    std::string user;        // empty: the container's default user
    std::string working_dir; // empty: the container's
    bool attach_stdin = false;
};

class docker_api {
  public:
    // Reads the TLS files when the engine is reached over TLS: a missing or bad file is a clear error here,
    // before any trial work.
    // `timeout`: how long one request may go unanswered.
    static boost::system::result<docker_api, relay_error>
    open(asio::any_io_executor executor, engine_endpoint engine, std::chrono::milliseconds timeout);

    // The engine's API version, from /version; fails when no engine answers.
    asio::awaitable<boost::system::result<std::string, relay_error>> negotiate();
    asio::awaitable<boost::system::result<docker_response, relay_error>>
    request(std::string method, std::string target, std::string body = {},
            std::string content_type = "application/json");
    asio::awaitable<boost::system::result<container_facts, relay_error>> inspect_container(std::string id);
    asio::awaitable<boost::system::result<std::string, relay_error>>
    find_compose_container(std::string project, std::string service);
    // create_exec then start_exec.
    asio::awaitable<boost::system::result<std::unique_ptr<exec_stream>, relay_error>>
    exec(std::string container, exec_spec spec, std::string& exec_id);
    // The exec's id. Nothing runs until it is started; one never started is dropped with its container.
    asio::awaitable<boost::system::result<std::string, relay_error>> create_exec(std::string container,
                                                                                 exec_spec spec);
    // Starts a created exec, attached: its stream.
    asio::awaitable<boost::system::result<std::unique_ptr<exec_stream>, relay_error>>
    start_exec(std::string container, std::string exec_id);
    // The exec's exit code; nullopt while the engine still reports it running.
    asio::awaitable<boost::system::result<std::optional<int>, relay_error>>
    exec_exit_code(std::string exec_id);
    // The exec's state as the engine reports it.
    asio::awaitable<boost::system::result<exec_state, relay_error>> inspect_exec(std::string exec_id);

    [[nodiscard]] const engine_endpoint& engine() const { return engine_; }
    [[nodiscard]] std::chrono::milliseconds timeout() const { return timeout_; }
    // "the Docker engine at URL: WHAT within N s": what to say when the timeout passed.
    [[nodiscard]] std::string unanswered(const std::string& what) const;
    // HTTP requests made so far (an exec stream counts once), for the benchmark's engine-call figure.
    [[nodiscard]] unsigned calls() const { return calls_; }

  private:
    asio::awaitable<boost::system::result<docker_response, relay_error>>
    send(const std::string& method, const std::string& target, const std::string& body,
         const std::string& content_type);
    docker_api(asio::any_io_executor executor, engine_endpoint engine,
               std::shared_ptr<asio::ssl::context> tls, std::chrono::milliseconds timeout);

    asio::any_io_executor executor_;
    engine_endpoint engine_;
    std::shared_ptr<asio::ssl::context> tls_;
    tls_session_cache sessions_;
    std::chrono::milliseconds timeout_;
    // API 1.41 (Docker 20.10) is assumed and only negotiated down when an older engine refuses it: one
    // engine call fewer on every trial.
    std::string version_prefix_ = "/v1.41";
    bool negotiated_ = false;
    unsigned calls_ = 0;
};

} // namespace maka_eval::relay
