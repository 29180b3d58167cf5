// Fuzz the Docker engine reply readers: any body gives a value or a clear error (never an exception, never
// an empty message), and a frame header is accepted only within the frame limit. The same bytes as a
// DOCKER_HOST give an engine address whose url() reads back as the same address, or a clear error; as an
// archive (the installed helper's download), a first entry or none.
#include "relay/engine/engine_endpoint.hpp"
#include "relay/engine/engine_replies.hpp"
#include "relay/engine/tar_archive.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

// No variables, and a HOME without a ~/.docker (no context is read from this machine).
std::optional<std::string> no_environment(const char* name) {
    return std::string_view(name) == "HOME" ? std::optional<std::string>("/nonexistent-maka-eval-fuzz-home")
                                            : std::nullopt;
}

void engine_address(std::string_view text) {
    using namespace maka_eval::relay;
    const auto endpoint = resolve_engine_endpoint(std::string(text), &no_environment);
    if (!endpoint) {
        if (endpoint.error().message.empty()) {
            std::abort();
        }
        return;
    }
    const auto again = resolve_engine_endpoint(endpoint->url(), &no_environment);
    if (!again || again->transport != endpoint->transport || again->url() != endpoint->url() ||
        again->host != endpoint->host || again->port != endpoint->port || again->path != endpoint->path) {
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace maka_eval::relay;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    if (auto facts = parse_container(body); !facts && facts.error().message.empty()) {
        std::abort();
    } else if (facts && facts->id.empty()) {
        std::abort();
    }
    if (auto id = parse_exec_id(body); !id ? id.error().message.empty() : id->empty()) {
        std::abort();
    }
    if (auto state = parse_exec_state(body);
        state && state->exit_code && (*state->exit_code < 0 || *state->exit_code > 255)) {
        std::abort();
    }
    if (auto ids = parse_container_ids(body);
        !ids ? ids.error().message.empty()
             : std::any_of(ids->begin(), ids->end(), [](const std::string& id) { return id.empty(); })) {
        std::abort();
    }
    engine_address(body);
    // As an archive the engine sent: a file's content never runs past what arrived.
    if (const auto entry = first_tar_entry(body); entry && entry->content.size() > body.size()) {
        std::abort();
    }
    (void)parse_api_version(body);
    (void)engine_message(body);
    if (size >= 8) {
        const auto header = parse_frame_header(body.substr(0, 8));
        if (header && (header->size > exec_frame_limit_bytes || header->stream > 2)) {
            std::abort();
        }
    }
    return 0;
}
