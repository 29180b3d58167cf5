// The Docker Engine API client (see docker_api.hpp): Beast HTTP/1.1 over a unix socket, TCP, or TLS.
#include "relay/engine/docker_api.hpp"

#include "contracts/secret.hpp"
#include "contracts/wire_json.hpp"
#include "relay/engine/engine_replies.hpp"
#include "relay/engine/engine_tls.hpp"
#include "relay/support/tcp_endpoints.hpp"

#include <charconv>
#include <unistd.h>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/parse.hpp>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace maka_eval::relay {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using local_socket = asio::local::stream_protocol::socket;
using tcp_socket = asio::ip::tcp::socket;
using tls_stream = beast::ssl_stream<tcp_socket>;

// Reaching the engine and the TLS handshake: a remote engine that does not answer must not hold a trial.
constexpr auto connect_timeout = std::chrono::seconds(15);

// One connection to the engine: unix, TCP, or TLS over TCP.
struct connection {
    std::variant<local_socket, tcp_socket, tls_stream> socket;
    beast::flat_buffer buffer;
    tls_verify_note note; // what verification found wrong (TLS only)

    template <typename F>
    decltype(auto) visit(F&& f) {
        return std::visit(std::forward<F>(f), socket);
    }
    SSL* ssl() {
        auto* tls = std::get_if<tls_stream>(&socket);
        return tls != nullptr ? tls->native_handle() : nullptr;
    }
    // Ends whatever is pending on the connection (it completes with an error).
    void close() {
        visit([](auto& s) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(s).close(ignored);
        });
    }
    asio::any_io_executor executor() {
        return visit([](auto& s) { return asio::any_io_executor(s.get_executor()); });
    }
};

// Closes a connection when `timeout` passes before the deadline is lifted, so that a pending write or read
// ends with an error: an engine that accepts and never answers cannot hold a trial. A timer handler rather
// than a cancelled operation, so it works the same for every layer (unix, TCP, TLS) and for the Beast
// operations on top. The handler may run after its deadline is gone: it only touches the shared state,
// and the connection only while the deadline is armed (the connection outlives an armed deadline).
class connection_deadline {
  public:
    connection_deadline(connection& c, std::chrono::milliseconds timeout)
        : timer_(c.executor(), timeout), state_(std::make_shared<state>()) {
        state_->c = &c;
        timer_.async_wait([s = state_](boost::system::error_code ec) {
            if (!ec && s->c != nullptr) {
                s->fired = true;
                s->c->close();
            }
        });
    }
    connection_deadline(const connection_deadline&) = delete;
    connection_deadline& operator=(const connection_deadline&) = delete;
    ~connection_deadline() { lift(); }
    void lift() {
        state_->c = nullptr;
        timer_.cancel();
    }
    [[nodiscard]] bool fired() const { return state_->fired; }

  private:
    struct state {
        connection* c = nullptr;
        bool fired = false;
    };
    asio::steady_timer timer_;
    std::shared_ptr<state> state_;
};

// `what` failed on connection `c`. Over TLS the reason may be the handshake's (with TLS 1.3 the engine
// refuses a client certificate only once the client's side of the handshake is done, so the first read
// fails): then the TLS failure is the whole story.
std::string failure_text(connection& c, const engine_endpoint& engine, const std::string& what,
                         const boost::system::error_code& ec) {
    if (c.ssl() != nullptr &&
        (ec.category() == asio::error::get_ssl_category() || ::SSL_get_verify_result(c.ssl()) != X509_V_OK)) {
        return describe_tls_failure(ec, c.ssl(), c.note, engine);
    }
    return what + ": " + ec.message();
}

template <typename Operation>
asio::awaitable<boost::system::error_code> within_connect_timeout(Operation operation) {
    asio::steady_timer timer(co_await asio::this_coro::executor, connect_timeout);
    auto done = co_await (operation() || timer.async_wait(as_tuple(use_awaitable)));
    if (done.index() == 1) {
        co_return asio::error::timed_out;
    }
    co_return std::get<0>(std::get<0>(done));
}

asio::awaitable<boost::system::result<std::unique_ptr<connection>, relay_error>>
open_connection(const engine_endpoint& engine, asio::ssl::context* tls, const tls_session_cache& sessions) {
    auto executor = co_await asio::this_coro::executor;
    auto unreachable = [&](const std::string& why) {
        return relay_error{relay_errc::engine,
                           "cannot reach the Docker engine at " + engine.url() + ": " + why};
    };
    if (engine.transport == engine_transport::unix_socket) {
        auto c = std::make_unique<connection>(connection{local_socket(executor), {}, {}});
        auto& socket = std::get<local_socket>(c->socket);
        const asio::local::stream_protocol::endpoint path(engine.path);
        const auto ec = co_await within_connect_timeout(
            [&] { return socket.async_connect(path, as_tuple(use_awaitable)); });
        if (ec == asio::error::access_denied) {
            co_return unreachable(ec.message() +
                                  " (the engine's socket admits root and the docker group: run as "
                                  "root, or add this user to it: usermod -aG docker USER)");
        }
        if (ec) {
            co_return unreachable(ec.message());
        }
        co_return c;
    }
    const std::string host = engine.host; // named: GCC 12 and temporaries in a co_await's operands
    const std::string port = engine.port;
    auto resolved = co_await tcp_endpoints(executor, host, port);
    if (!resolved) {
        co_return unreachable(resolved.error().message());
    }
    const auto& endpoints = *resolved;
    tcp_socket socket(executor);
    const auto cec = co_await within_connect_timeout(
        [&] { return asio::async_connect(socket, endpoints, as_tuple(use_awaitable)); });
    if (cec) {
        co_return unreachable(cec.message());
    }
    boost::system::error_code no_delay_failed; // only a latency hint: the connection works without it
    socket.set_option(asio::ip::tcp::no_delay(true), no_delay_failed);
    if (engine.transport == engine_transport::tcp) {
        co_return std::make_unique<connection>(connection{std::move(socket), {}, {}});
    }
    auto c = std::make_unique<connection>(connection{tls_stream(std::move(socket), *tls), {}, {}});
    auto& stream = std::get<tls_stream>(c->socket);
    if (!expect_engine_identity(stream.native_handle(), engine, c->note)) {
        co_return unreachable("cannot set up TLS for host " + engine.host);
    }
    sessions.resume(stream.native_handle());
    const auto hec = co_await within_connect_timeout(
        [&] { return stream.async_handshake(asio::ssl::stream_base::client, as_tuple(use_awaitable)); });
    if (hec) {
        co_return relay_error{relay_errc::engine,
                              hec == asio::error::timed_out
                                  ? "the TLS handshake with the Docker engine at " + engine.url() +
                                        " did not finish in " + std::to_string(connect_timeout.count()) + " s"
                                  : describe_tls_failure(hec, stream.native_handle(), c->note, engine)};
    }
    co_return c;
}

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

// The demultiplexed exec stream.
class hijacked_stream final : public exec_stream {
  public:
    hijacked_stream(std::unique_ptr<connection> c, std::string leftover)
        : c_(std::move(c)), raw_(std::move(leftover)) {}

    asio::awaitable<bool> write(std::string data) override {
        auto [ec, n] = co_await c_->visit(
            [&](auto& s) { return asio::async_write(s, asio::buffer(data), as_tuple(use_awaitable)); });
        contracts::wipe(data); // it may be the `run` request with credentials
        co_return !ec;
    }

    asio::awaitable<std::optional<std::string>> read_line(std::size_t limit) override {
        while (true) {
            const auto newline = out_.find('\n');
            if (newline != std::string::npos) {
                std::string line = out_.substr(0, newline);
                out_.erase(0, newline + 1);
                co_return line;
            }
            if (out_.size() > limit) {
                co_return std::nullopt;
            }
            // co_await only as a statement of its own: GCC 12 miscompiles it inside conditions.
            const bool more = co_await next_frame();
            if (!more) {
                co_return std::nullopt;
            }
        }
    }

    asio::awaitable<std::string> read_rest(std::size_t limit) override {
        while (out_.size() <= limit) {
            const bool more = co_await next_frame();
            if (!more) {
                break;
            }
        }
        co_return std::move(out_);
    }

    // Over TLS too this shuts down only the socket's sending side, with no close_notify first: that would
    // need an asynchronous write while a read may be pending. The engine (Go's crypto/tls) takes a clean
    // end of the stream at a record boundary as EOF, which is what the exec's stdin then gets.
    void close_stdin() override {
        c_->visit([](auto& s) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(s).shutdown(asio::socket_base::shutdown_send, ignored);
        });
    }

    void close() override { c_->close(); }

    void expire_after(std::optional<std::chrono::milliseconds> timeout) override {
        expired_ = expired_ || (deadline_ && deadline_->fired());
        deadline_.reset();
        if (timeout) {
            deadline_.emplace(*c_, *timeout);
        }
    }
    bool expired() const override { return expired_ || (deadline_ && deadline_->fired()); }

    const std::string& stderr_text() const override { return err_; }

  private:
    // Reads one frame: [stream, 0, 0, 0, size (big-endian u32)] then `size` bytes. A header that is not
    // the engine's format, or announces more than the frame limit, ends the stream with a clear message.
    asio::awaitable<bool> next_frame() {
        const bool header = co_await fill(8);
        if (!header) {
            co_return false;
        }
        const auto parsed = parse_frame_header(std::string_view(raw_).substr(0, 8));
        if (!parsed) {
            const std::string line = "maka-eval-relay: " + parsed.error().message + "\n";
            (void)::write(STDERR_FILENO, line.data(), line.size());
            close();
            co_return false;
        }
        const std::size_t size = parsed->size;
        const unsigned char stream = parsed->stream;
        const bool body = co_await fill(8 + size);
        if (!body) {
            co_return false;
        }
        const std::string_view payload(raw_.data() + 8, size);
        if (stream == 2) {
            // The helper's log: passed on to ours, and a bounded copy kept for one-shot execs.
            (void)::write(STDERR_FILENO, payload.data(), payload.size());
            if (err_.size() < 65536) {
                err_.append(payload.substr(0, 65536 - err_.size()));
            }
        } else {
            out_.append(payload);
        }
        raw_.erase(0, 8 + size);
        co_return true;
    }

    asio::awaitable<bool> fill(std::size_t need) {
        char chunk[65536];
        while (raw_.size() < need) {
            auto [ec, n] = co_await c_->visit(
                [&](auto& s) { return s.async_read_some(asio::buffer(chunk), as_tuple(use_awaitable)); });
            if (ec) {
                co_return false;
            }
            raw_.append(chunk, n);
        }
        co_return true;
    }

    std::unique_ptr<connection> c_;
    std::optional<connection_deadline> deadline_; // destroyed before c_: it points to it
    bool expired_ = false;
    std::string raw_;
    std::string out_;
    std::string err_;
};

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
    co_return std::unique_ptr<exec_stream>(
        std::make_unique<hijacked_stream>(std::move(*c), std::move(leftover)));
}

asio::awaitable<boost::system::result<std::optional<int>, relay_error>>
docker_api::exec_exit_code(std::string exec_id) {
    auto response = co_await request("GET", "/exec/" + exec_id + "/json");
    if (!response) {
        co_return response.error();
    }
    if (response->status != 200) {
        co_return relay_error{relay_errc::engine, "cannot inspect exec " + exec_id};
    }
    auto state = parse_exec_state(response->body);
    if (!state) {
        co_return state.error();
    }
    if (state->running) {
        co_return std::optional<int>();
    }
    co_return std::optional<int>(state->exit_code.value_or(-1));
}

} // namespace maka_eval::relay
