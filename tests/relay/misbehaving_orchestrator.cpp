// The scriptable orchestrator (see misbehaving_orchestrator.hpp).
#include "relay/misbehaving_orchestrator.hpp"

#include "contracts/wire_json.hpp"

#include <chrono>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::test {
namespace {

namespace asio = boost::asio;

asio::awaitable<void> pause(std::uint32_t ms) {
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// The `execute` line the script sends (or what it sends instead).
std::string execute_line(const relay::orchestrator_peer& peer, const orchestrator_script& script) {
    const auto& token = peer.token();
    switch (script.act) {
    case misbehaviour::wrong_kind:
        return contracts::serialize_verify(token);
    case misbehaviour::garbage:
        return "this is not json\n";
    case misbehaviour::huge_line:
        return std::string(10U << 20U, 'x') + "\n";
    default:
        break;
    }
    if (script.raw_execute) {
        if (auto raw = contracts::parse_object(*script.raw_execute, 16U << 20U)) {
            (*raw)["token"] = token;
            (*raw)["kind"] = "execute";
            return contracts::to_wire(*raw) + "\n";
        }
    }
    return contracts::serialize_execute(script.act == misbehaviour::wrong_token ? "not-the-token" : token,
                                        script.request);
}

} // namespace

std::optional<misbehaviour> misbehaviour_from(std::string_view name) {
    static const std::pair<std::string_view, misbehaviour> names[] = {
        {"none", misbehaviour::none},
        {"wrong-token", misbehaviour::wrong_token},
        {"wrong-kind", misbehaviour::wrong_kind},
        {"garbage", misbehaviour::garbage},
        {"huge-line", misbehaviour::huge_line},
        {"close-after-accept", misbehaviour::close_after_accept},
        {"close-after-ready", misbehaviour::close_after_ready},
        {"close-during-run", misbehaviour::close_during_run},
        {"control-during-run", misbehaviour::control_during_run},
        {"close-after-executed", misbehaviour::close_after_executed},
        {"bad-decision", misbehaviour::bad_decision},
    };
    for (const auto& [text, value] : names) {
        if (text == name) {
            return value;
        }
    }
    return std::nullopt;
}

asio::awaitable<relay::transcript> serve_script(relay::orchestrator_peer& peer, orchestrator_script script) {
    const auto act = script.act;
    const auto event = [&script](std::string_view what) {
        if (script.on_event) {
            script.on_event(what);
        }
    };
    if (!co_await peer.accept()) {
        co_return std::move(peer.seen());
    }
    if (act == misbehaviour::close_after_accept) {
        peer.close("closed after accept");
        co_return std::move(peer.seen());
    }
    if (!co_await peer.expect_ready()) {
        co_return std::move(peer.seen());
    }
    event("ready");
    if (act == misbehaviour::close_after_ready) {
        peer.close("closed after ready");
        co_return std::move(peer.seen());
    }
    if (script.hold) {
        co_await peer.read_line(std::chrono::seconds(600)); // until the relay goes away
        peer.seen().failure = "held";
        co_return std::move(peer.seen());
    }
    co_await peer.send(execute_line(peer, script));
    if (act == misbehaviour::close_during_run || act == misbehaviour::control_during_run) {
        co_await pause(script.during_run_delay_ms);
        if (act == misbehaviour::close_during_run) {
            peer.close("closed during run");
            co_return std::move(peer.seen());
        }
        std::string early = contracts::serialize_verify(peer.token()); // named: GCC 12 co_await bug
        co_await peer.send(std::move(early));
    }
    if (!co_await peer.expect_executed()) {
        co_return std::move(peer.seen());
    }
    event("executed");
    if (act == misbehaviour::close_after_executed) {
        peer.close("");
        co_return std::move(peer.seen());
    }
    if (script.verify_delay_ms > 0) {
        // The pause ends early when the relay goes away (or speaks out of turn): nothing waits it out.
        auto early = co_await peer.read_line(std::chrono::milliseconds(script.verify_delay_ms));
        if (!early.timed_out) {
            if (early.line) {
                peer.seen().received.push_back(std::move(*early.line));
                peer.seen().failure = "relay sent a line after executed";
            }
            co_return std::move(peer.seen());
        }
    }
    if (act == misbehaviour::bad_decision) {
        co_await peer.decide("{\"token\":" + contracts::to_wire(boost::json::string(peer.token())) +
                                 ",\"kind\":\"execute\"}\n",
                             false);
    } else {
        std::string verify = contracts::serialize_verify(peer.token());
        co_await peer.decide(std::move(verify));
    }
    co_return std::move(peer.seen());
}

} // namespace maka_eval::test
