// The Docker Engine API client (see docker_api.hpp): Beast HTTP/1.1 over a unix socket, TCP, or TLS.
#include "relay/engine/docker_api.hpp"

#include "contracts/wire_json.hpp"
#include "relay/engine/engine_connection.hpp"
#include "relay/engine/engine_replies.hpp"
#include "relay/engine/engine_tls.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

namespace maka_eval::relay {
namespace {

namespace http = beast::http; // beast: engine_connection.hpp
using asio::as_tuple;
using asio::use_awaitable;

// The body is referenced, not copied: an upload body is a whole helper binary.
http::request<http::span_body<const char>> make_request(http::verb verb, const std::string& target,
                                                        std::string_view body,
                                                        const std::string& content_type) {
    http::request<http::span_body<const char>> req{verb, target, 11};
    req.set(http::field::host, "docker");
    req.set(http::field::user_agent, "maka-eval-relay");
    if (!body.empty() || verb == http::verb::post || verb == http::verb::put) {
        req.set(http::field::content_type, content_type);
        req.body() = boost::span<const char>(body.data(), body.size());
        req.prepare_payload();
    }
    return req;
}

} // namespace

docker_api::docker_api(asio::any_io_executor executor, engine_endpoint engine,
                       std::shared_ptr<asio::ssl::context> tls, std::chrono::milliseconds timeout)
    : executor_(std::move(executor)), engine_(std::move(engine)), tls_(std::move(tls)), timeout_(timeout) {}

boost::system::result<docker_api, relay_error>
docker_api::open(asio::any_io_executor executor, engine_endpoint engine, std::chrono::milliseconds timeout) {
    std::shared_ptr<asio::ssl::context> tls;
    if (engine.transport == engine_transport::tls) {
        auto loaded = load_engine_tls(engine.tls);
        if (!loaded) {
            return loaded.error();
        }
        tls = std::move(*loaded);
    }
    return docker_api(std::move(executor), std::move(engine), std::move(tls), timeout);
}

std::string docker_api::unanswered(const std::string& what) const {
    const auto ms = timeout_.count();
    return "the Docker engine at " + engine_.url() + ": " + what + " within " +
           (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
           " (--engine-timeout-ms)";
}

asio::awaitable<boost::system::result<std::string, relay_error>> docker_api::negotiate() {
    negotiated_ = true;
    version_prefix_.clear();
    auto version = co_await send("GET", "/version", {}, {});
    if (!version || version->status != 200) {
        co_return relay_error{relay_errc::engine,
                              "the Docker engine at " + engine_.url() + " did not say its version"};
    }
    std::string api = "1.41";
    if (const auto engine = parse_api_version(version->body)) {
        // Speak the engine's version when it is older than ours; 1.41 (Docker 20.10) otherwise.
        int major = 0;
        int minor = 0;
        if (std::sscanf(engine->c_str(), "%d.%d", &major, &minor) == 2 &&
            (major < 1 || (major == 1 && minor < 41))) {
            api = *engine;
        }
    }
    version_prefix_ = "/v" + api;
    co_return boost::system::result<std::string, relay_error>(boost::system::in_place_value, api);
}

asio::awaitable<boost::system::result<docker_response, relay_error>>
docker_api::request(std::string method, std::string target, std::string body, std::string content_type) {
    auto response = co_await send(method, target, body, content_type);
    // "client version 1.41 is too new": speak the engine's older version, once.
    if (response && response->status == 400 && !negotiated_ &&
        response->body.find("too new") != std::string::npos) {
        auto version = co_await negotiate();
        if (version) {
            response = co_await send(method, target, body, content_type);
        }
    }
    co_return response;
}

asio::awaitable<boost::system::result<docker_response, relay_error>>
docker_api::send(const std::string& method, const std::string& target, const std::string& body,
                 const std::string& content_type) {
    ++calls_;
    auto c = co_await open_connection(engine_, tls_.get(), sessions_);
    if (!c) {
        co_return c.error();
    }
    auto req = make_request(http::string_to_verb(method), version_prefix_ + target, body, content_type);
    const connection_deadline deadline(**c, timeout_);
    auto [wec, written] =
        co_await (*c)->visit([&](auto& s) { return http::async_write(s, req, as_tuple(use_awaitable)); });
    if (wec) {
        co_return relay_error{
            relay_errc::engine,
            deadline.fired() ? unanswered("no answer to " + method + " " + target)
                             : failure_text(**c, engine_, "the Docker engine closed the connection", wec)};
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(64U << 20U);
    if (method == "HEAD") {
        parser.skip(true);
    }
    auto [rec, read] = co_await (*c)->visit(
        [&](auto& s) { return http::async_read(s, (*c)->buffer, parser, as_tuple(use_awaitable)); });
    if (rec) {
        co_return relay_error{relay_errc::engine,
                              deadline.fired()
                                  ? unanswered("no answer to " + method + " " + target)
                                  : failure_text(**c, engine_,
                                                 "the Docker engine did not answer " + method + " " + target,
                                                 rec)};
    }
    if ((*c)->ssl() != nullptr) {
        sessions_.remember((*c)->ssl());
    }
    auto res = parser.release();
    if (res.result_int() == 400 && engine_.transport == engine_transport::tcp &&
        res.body().find("HTTP request to an HTTPS server") != std::string::npos) {
        co_return relay_error{
            relay_errc::engine,
            "the Docker engine at " + engine_.url() +
                " speaks TLS on that port: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (the "
                "directory of ca.pem, cert.pem and key.pem)"};
    }
    std::string api_version(res["Api-Version"]);
    co_return docker_response{static_cast<int>(res.result_int()), std::move(res.body()),
                              std::move(api_version)};
}

asio::awaitable<boost::system::result<container_facts, relay_error>>
docker_api::inspect_container(std::string id) {
    auto response = co_await request("GET", "/containers/" + id + "/json");
    if (!response) {
        co_return response.error();
    }
    if (response->status == 404) {
        // Only an engine's 404 means that: a peer that answers 404 to everything is not an engine at all.
        auto ping = co_await request("GET", "/_ping");
        if (!ping || ping->status != 200 || ping->body != "OK" || ping->api_version.empty()) {
            const std::string answer = !ping ? ping.error().message
                                             : "HTTP " + std::to_string(ping->status) +
                                                   (ping->status == 200 && ping->api_version.empty()
                                                        ? " without an Api-Version header"
                                                        : "");
            co_return relay_error{relay_errc::engine, "the peer at " + engine_.url() +
                                                          " is not a Docker engine (GET /_ping answered " +
                                                          answer + "): check DOCKER_HOST or --docker-host"};
        }
        co_return relay_error{relay_errc::not_found, "container " + id + " does not exist"};
    }
    if (response->status != 200) {
        co_return relay_error{relay_errc::engine,
                              "inspecting container " + id + ": " + engine_message(response->body)};
    }
    auto facts = parse_container(response->body);
    if (!facts) {
        co_return facts.error();
    }
    co_return std::move(*facts);
}

asio::awaitable<boost::system::result<std::string, relay_error>>
docker_api::find_compose_container(std::string project, std::string service) {
    // Running ones only, as `docker compose exec` picks; two would leave which one is meant to a guess.
    const boost::json::object filters{{"label", boost::json::array{"com.docker.compose.project=" + project,
                                                                   "com.docker.compose.service=" + service}},
                                      {"status", boost::json::array{"running"}}};
    std::string encoded;
    for (const char ch : contracts::to_wire(filters)) {
        const auto c = static_cast<unsigned char>(ch);
        static constexpr char digits[] = "0123456789ABCDEF";
        if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.') {
            encoded.push_back(static_cast<char>(c));
        } else {
            encoded += {'%', digits[c >> 4U], digits[c & 0xFU]};
        }
    }
    auto response = co_await request("GET", "/containers/json?filters=" + encoded);
    if (!response) {
        co_return response.error();
    }
    if (response->status != 200) {
        co_return relay_error{relay_errc::engine, "cannot list containers of compose project " + project +
                                                      ": HTTP " + std::to_string(response->status)};
    }
    auto ids = parse_container_ids(response->body);
    if (!ids) {
        co_return ids.error();
    }
    if (ids->size() != 1) {
        co_return relay_error{relay_errc::environment,
                              std::to_string(ids->size()) + " running containers of compose project " +
                                  project + " service " + service +
                                  (ids->empty() ? "" : ": which one is meant cannot be told")};
    }
    co_return boost::system::result<std::string, relay_error>(boost::system::in_place_value,
                                                              std::move(ids->front()));
}

asio::awaitable<boost::system::result<std::unique_ptr<exec_stream>, relay_error>>
docker_api::exec(std::string container, exec_spec spec, std::string& exec_id) {
    auto id = co_await create_exec(container, std::move(spec));
    if (!id) {
        co_return id.error();
    }
    exec_id = std::move(*id);
    co_return co_await start_exec(std::move(container), exec_id);
}

asio::awaitable<boost::system::result<std::string, relay_error>>
docker_api::create_exec(std::string container, exec_spec spec) {
    boost::json::array cmd;
    for (const auto& arg : spec.cmd) {
        cmd.emplace_back(arg);
    }
    boost::json::object create{{"AttachStdin", spec.attach_stdin},
                               {"AttachStdout", true},
                               {"AttachStderr", true},
                               {"Tty", false},
                               {"Cmd", std::move(cmd)}};
    if (!spec.user.empty()) {
        create["User"] = spec.user;
    }
    if (!spec.working_dir.empty()) {
        create["WorkingDir"] = spec.working_dir;
    }
    auto created = co_await request("POST", "/containers/" + container + "/exec", contracts::to_wire(create));
    if (!created) {
        co_return created.error();
    }
    if (created->status != 201) {
        // 404: no such container; 409: the engine says whether it is paused or stopped.
        const std::string why = created->status == 404 ? "container " + container + " does not exist"
                                                       : engine_message(created->body);
        co_return relay_error{relay_errc::engine, "cannot exec in container " + container + ": " + why};
    }
    co_return parse_exec_id(created->body);
}

asio::awaitable<boost::system::result<std::unique_ptr<exec_stream>, relay_error>>
docker_api::start_exec(std::string container, std::string exec_id) {
    ++calls_;
    auto c = co_await open_connection(engine_, tls_.get(), sessions_);
    if (!c) {
        co_return c.error();
    }
    auto req = make_request(http::verb::post, version_prefix_ + "/exec/" + exec_id + "/start",
                            R"({"Detach":false,"Tty":false})", "application/json");
    req.set(http::field::connection, "Upgrade");
    req.set(http::field::upgrade, "tcp");
    connection_deadline deadline(**c, timeout_);
    auto [wec, written] =
        co_await (*c)->visit([&](auto& s) { return http::async_write(s, req, as_tuple(use_awaitable)); });
    http::response_parser<http::empty_body> parser;
    boost::system::error_code rec = wec;
    if (!rec) {
        auto [ec2, n] = co_await (*c)->visit([&](auto& s) {
            return http::async_read_header(s, (*c)->buffer, parser, as_tuple(use_awaitable));
        });
        rec = ec2;
    }
    if (rec || (parser.get().result_int() != 101 && parser.get().result_int() != 200)) {
        const std::string what = "cannot start the exec in container " + container;
        co_return relay_error{relay_errc::engine,
                              deadline.fired()
                                  ? unanswered("no answer to the start of an exec in container " + container)
                              : rec ? failure_text(**c, engine_, what, rec)
                                    : what + ": HTTP " + std::to_string(parser.get().result_int())};
    }
    deadline.lift(); // the stream's reads are bounded by its own deadline (expire_after) where they must be
    // Bytes read past the header already belong to the stream.
    const auto data = (*c)->buffer.data();
    std::string leftover(static_cast<const char*>(data.data()), data.size());
    (*c)->buffer.consume(data.size());
    co_return make_exec_stream(std::move(*c), std::move(leftover));
}

asio::awaitable<boost::system::result<std::optional<int>, relay_error>>
docker_api::exec_exit_code(std::string exec_id) {
    auto state = co_await inspect_exec(std::move(exec_id));
    if (!state) {
        co_return state.error();
    }
    if (state->running) {
        co_return std::optional<int>();
    }
    co_return std::optional<int>(state->exit_code.value_or(-1));
}

asio::awaitable<boost::system::result<exec_state, relay_error>>
docker_api::inspect_exec(std::string exec_id) {
    auto response = co_await request("GET", "/exec/" + exec_id + "/json");
    if (!response) {
        co_return response.error();
    }
    if (response->status != 200) {
        co_return relay_error{relay_errc::engine, "cannot inspect exec " + exec_id};
    }
    co_return parse_exec_state(response->body);
}

} // namespace maka_eval::relay
