// Engine replies and exec frame headers (see engine_replies.hpp).
#include "relay/engine/engine_replies.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace maka_eval::relay {
namespace {

namespace json = boost::json;

boost::system::result<json::object, relay_error> object_of(std::string_view body, std::string_view what) {
    boost::system::error_code ec;
    auto value = json::parse(body, ec);
    if (ec || !value.is_object()) {
        return relay_error{relay_errc::engine, "the Docker engine sent an unreadable " + std::string(what)};
    }
    return std::move(value.get_object());
}

const json::object* child_object(const json::object& parent, std::string_view key) {
    const auto* value = parent.if_contains(key);
    return value != nullptr && value->is_object() ? &value->get_object() : nullptr;
}

std::optional<std::string> text_at(const json::object& parent, std::string_view key) {
    const auto* value = parent.if_contains(key);
    if (value == nullptr || !value->is_string()) {
        return std::nullopt;
    }
    return std::string(value->get_string());
}

bool flag_at(const json::object& parent, std::string_view key) {
    const auto* value = parent.if_contains(key);
    return value != nullptr && value->is_bool() && value->get_bool();
}

} // namespace

boost::system::result<container_facts, relay_error> parse_container(std::string_view body) {
    auto object = object_of(body, "container description");
    if (!object) {
        return object.error();
    }
    container_facts out;
    auto id = text_at(*object, "Id");
    const auto* state = child_object(*object, "State");
    const auto* config = child_object(*object, "Config");
    if (!id || id->empty() || state == nullptr || config == nullptr) {
        return relay_error{relay_errc::engine,
                           "the Docker engine's container description lacks Id, State or Config"};
    }
    out.id = std::move(*id);
    out.image = text_at(*object, "Image").value_or("");
    out.running = flag_at(*state, "Running");
    out.paused = flag_at(*state, "Paused");
    out.oom_killed = flag_at(*state, "OOMKilled");
    if (const auto* pid = state->if_contains("Pid");
        pid != nullptr && pid->is_int64() && pid->get_int64() > 0 && pid->get_int64() <= (1LL << 22)) {
        out.pid = static_cast<long>(pid->get_int64());
    }
    out.started_at = text_at(*state, "StartedAt").value_or("");
    if (const auto* restarts = object->if_contains("RestartCount");
        restarts != nullptr && restarts->is_int64() && restarts->get_int64() >= 0) {
        out.restart_count = static_cast<long>(restarts->get_int64());
    }
    if (const auto* host_config = child_object(*object, "HostConfig")) {
        out.readonly_rootfs = flag_at(*host_config, "ReadonlyRootfs");
    }
    out.user = text_at(*config, "User").value_or("");
    if (const auto* labels = child_object(*config, "Labels")) {
        out.compose_project = text_at(*labels, "com.docker.compose.project").value_or("");
    }
    return out;
}

boost::system::result<std::string, relay_error> parse_exec_id(std::string_view body) {
    auto object = object_of(body, "exec id");
    if (!object) {
        return object.error();
    }
    auto id = text_at(*object, "Id");
    if (!id || id->empty()) {
        return relay_error{relay_errc::engine, "the Docker engine sent an unreadable exec id"};
    }
    return boost::system::result<std::string, relay_error>(boost::system::in_place_value, std::move(*id));
}

boost::system::result<std::vector<std::string>, relay_error> parse_container_ids(std::string_view body) {
    boost::system::error_code ec;
    auto value = json::parse(body, ec);
    if (ec || !value.is_array()) {
        return relay_error{relay_errc::engine, "the Docker engine sent an unreadable container list"};
    }
    std::vector<std::string> ids;
    for (const auto& entry : value.get_array()) {
        auto id = entry.is_object() ? text_at(entry.get_object(), "Id") : std::nullopt;
        if (!id || id->empty()) {
            return relay_error{relay_errc::engine,
                               "the Docker engine's container list has an entry without an Id"};
        }
        ids.push_back(std::move(*id));
    }
    return ids;
}

boost::system::result<exec_state, relay_error> parse_exec_state(std::string_view body) {
    auto object = object_of(body, "exec description");
    if (!object) {
        return object.error();
    }
    exec_state out;
    out.running = flag_at(*object, "Running");
    if (const auto* code = object->if_contains("ExitCode");
        code != nullptr && code->is_int64() && code->get_int64() >= 0 && code->get_int64() <= 255) {
        out.exit_code = static_cast<int>(code->get_int64());
    }
    if (const auto* pid = object->if_contains("Pid"); pid != nullptr && pid->is_int64()) {
        out.pid = pid->get_int64();
    }
    return out;
}

std::optional<std::string> parse_api_version(std::string_view body) {
    auto object = object_of(body, "version");
    if (!object) {
        return std::nullopt;
    }
    return text_at(*object, "ApiVersion");
}

std::string engine_message(std::string_view body) {
    if (auto object = object_of(body, "error")) {
        if (auto message = text_at(*object, "message")) {
            return *message;
        }
    }
    return std::string(body.substr(0, 200));
}

boost::system::result<frame_header, relay_error> parse_frame_header(std::string_view eight) {
    if (eight.size() != 8) {
        return relay_error{relay_errc::engine, "a truncated exec stream frame header"};
    }
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(eight[i]); };
    frame_header out;
    out.stream = byte(0);
    out.size = (std::size_t{byte(4)} << 24U) | (std::size_t{byte(5)} << 16U) | (std::size_t{byte(6)} << 8U) |
               std::size_t{byte(7)};
    if (out.stream > 2 || byte(1) != 0 || byte(2) != 0 || byte(3) != 0) {
        return relay_error{relay_errc::engine, "the exec stream is not in the engine's multiplexed format"};
    }
    if (out.size > exec_frame_limit_bytes) {
        return relay_error{relay_errc::engine, "the exec stream announced a frame of " +
                                                   std::to_string(out.size) + " bytes, over the limit of " +
                                                   std::to_string(exec_frame_limit_bytes)};
    }
    return out;
}

} // namespace maka_eval::relay
