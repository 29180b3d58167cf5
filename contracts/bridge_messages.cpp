// The bridge protocol's messages (see bridge_messages.hpp).
#include "contracts/bridge_messages.hpp"

#include "contracts/wire_json.hpp"

#include <stdexcept>

#include <boost/json.hpp>

namespace maka_eval::contracts {
namespace {

namespace json = boost::json;

json::value text_or_null(const std::string& text) {
    return text.empty() ? json::value(nullptr) : json::value(text);
}

// A string member; absent or null is "" (the environment's default); another type is an error.
bool read_text(const json::object& o, std::string_view key, std::string& out, bool required) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) {
        return !required;
    }
    if (!v->is_string()) {
        return false;
    }
    out = std::string(v->get_string());
    return !required || !out.empty();
}

} // namespace

void throw_exception_from_error(const bridge_error& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

std::string_view op_name(const bridge_request& request) {
    struct namer {
        std::string_view operator()(const bridge_exec&) const { return "exec"; }
        std::string_view operator()(const bridge_service_exec&) const { return "service_exec"; }
        std::string_view operator()(const bridge_upload&) const { return "upload"; }
        std::string_view operator()(const bridge_stop&) const { return "stop"; }
    };
    return std::visit(namer{}, request);
}

std::string serialize_bridge_request(std::int64_t id, const bridge_request& request) {
    json::object o{{"op", op_name(request)}};
    if (const auto* exec = std::get_if<bridge_exec>(&request)) {
        o["command"] = exec->command;
        o["cwd"] = text_or_null(exec->cwd);
        o["user"] = text_or_null(exec->user);
        o["timeoutSec"] = exec->timeout ? json::value(exec->timeout->count()) : json::value(nullptr);
        o["onAbandon"] = text_or_null(exec->on_abandon);
        if (!exec->on_abandon_source.empty()) {
            o["onAbandonUpload"] =
                json::object{{"source", exec->on_abandon_source}, {"target", exec->on_abandon_target}};
        }
    } else if (const auto* service = std::get_if<bridge_service_exec>(&request)) {
        o["service"] = service->service;
        o["command"] = service->command;
    } else if (const auto* upload = std::get_if<bridge_upload>(&request)) {
        o["source"] = upload->source;
        o["target"] = upload->target;
    }
    o["id"] = id;
    return to_wire(o) + "\n";
}

boost::system::result<std::pair<std::int64_t, bridge_request>, bridge_error>
parse_bridge_request(std::string_view line) {
    auto parsed = parse_object(line, std::size_t{1} << 20);
    if (!parsed) {
        return bridge_error{"not a JSON object line"};
    }
    const auto& o = *parsed;
    const auto* id = o.if_contains("id");
    const auto* op = o.if_contains("op");
    if (id == nullptr || !id->is_int64() || op == nullptr || !op->is_string()) {
        return bridge_error{"a request needs an integer id and an op"};
    }
    const std::string_view name = op->get_string();
    if (name == "exec") {
        bridge_exec exec;
        if (!read_text(o, "command", exec.command, true) || !read_text(o, "cwd", exec.cwd, false) ||
            !read_text(o, "user", exec.user, false) || !read_text(o, "onAbandon", exec.on_abandon, false)) {
            return bridge_error{"exec: command, cwd, user and onAbandon are strings (or null)"};
        }
        if (const auto* timeout = o.if_contains("timeoutSec"); timeout != nullptr && !timeout->is_null()) {
            if (!timeout->is_int64() || timeout->get_int64() <= 0) {
                return bridge_error{"exec: timeoutSec is a positive integer (or null)"};
            }
            exec.timeout = std::chrono::seconds(timeout->get_int64());
        }
        if (const auto* upload = o.if_contains("onAbandonUpload"); upload != nullptr && !upload->is_null()) {
            if (!upload->is_object() ||
                !read_text(upload->get_object(), "source", exec.on_abandon_source, true) ||
                !read_text(upload->get_object(), "target", exec.on_abandon_target, true)) {
                return bridge_error{"exec: onAbandonUpload is {source, target}"};
            }
        }
        return std::pair{id->get_int64(), bridge_request(std::move(exec))};
    }
    if (name == "service_exec") {
        bridge_service_exec service;
        if (!read_text(o, "service", service.service, true) ||
            !read_text(o, "command", service.command, true)) {
            return bridge_error{"service_exec: service and command are strings"};
        }
        return std::pair{id->get_int64(), bridge_request(std::move(service))};
    }
    if (name == "upload") {
        bridge_upload upload;
        if (!read_text(o, "source", upload.source, true) || !read_text(o, "target", upload.target, true)) {
            return bridge_error{"upload: source and target are strings"};
        }
        return std::pair{id->get_int64(), bridge_request(std::move(upload))};
    }
    if (name == "stop") {
        return std::pair{id->get_int64(), bridge_request(bridge_stop{})};
    }
    return bridge_error{"unknown op " + std::string(name)};
}

boost::system::result<bridge_reply, bridge_error> parse_bridge_reply(std::string_view line,
                                                                     std::size_t limit) {
    auto parsed = parse_object(line, limit);
    const auto* id = parsed ? parsed->if_contains("id") : nullptr;
    if (id == nullptr || !id->is_int64()) {
        return bridge_error{"the adapter sent an unreadable reply"};
    }
    const auto& o = *parsed;
    bridge_reply reply;
    reply.id = id->get_int64();
    const auto* ok = o.if_contains("ok");
    reply.ok = ok != nullptr && ok->is_bool() && ok->get_bool();
    if (const auto* code = o.if_contains("returnCode"); code != nullptr && code->is_int64()) {
        reply.return_code = code->get_int64();
    }
    (void)read_text(o, "stdout", reply.stdout_text, false);
    (void)read_text(o, "stderr", reply.stderr_text, false);
    (void)read_text(o, "error", reply.error, false);
    return reply;
}

std::string serialize_bridge_reply(const bridge_reply& reply) {
    json::object o{{"ok", reply.ok}};
    if (reply.ok && reply.return_code) {
        o["returnCode"] = *reply.return_code;
        o["stdout"] = reply.stdout_text;
        o["stderr"] = reply.stderr_text;
    } else if (!reply.ok) {
        o["error"] = reply.error;
    }
    o["id"] = reply.id;
    return to_wire(o) + "\n";
}

} // namespace maka_eval::contracts
