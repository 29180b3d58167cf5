// The Docker engine's address and TLS files from the environment (see engine_endpoint.hpp).
#include "relay/engine/engine_endpoint.hpp"

#include "contracts/digest.hpp"
#include "contracts/wire_json.hpp"
#include "posix/io.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace maka_eval::relay {
namespace {

constexpr std::string_view default_socket = "unix:///var/run/docker.sock";
constexpr std::string_view default_tls_host = "tcp://localhost:2376";
constexpr std::string_view tls_port = "2376";

bool non_empty(env_lookup env, const char* name) {
    const auto value = env(name);
    return value && !value->empty();
}

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

relay_error bad_host(const std::string& host, const std::string& why) {
    return relay_error{relay_errc::usage, "DOCKER_HOST " + host + ": " + why};
}

// HOST[:PORT][/] after tcp://, as the CLI reads it: an empty host is localhost, an absent port 2375.
boost::system::result<void, relay_error> parse_tcp(const std::string& whole, std::string_view rest,
                                                   engine_endpoint& out) {
    if (rest.ends_with('/')) {
        rest.remove_suffix(1);
    }
    if (rest.find('/') != std::string_view::npos) {
        return bad_host(whole, "a path after the address is not supported");
    }
    std::string_view port;
    if (rest.starts_with('[')) {
        const auto close = rest.find(']');
        if (close == std::string_view::npos) {
            return bad_host(whole, "an IPv6 address needs its closing ]");
        }
        out.host = std::string(rest.substr(1, close - 1));
        const auto after = rest.substr(close + 1);
        if (!after.empty() && !after.starts_with(':')) {
            return bad_host(whole, "expected :PORT after the IPv6 address");
        }
        port = after.empty() ? after : after.substr(1);
    } else {
        if (std::count(rest.begin(), rest.end(), ':') > 1) {
            return bad_host(whole, "write an IPv6 address in brackets: tcp://[ADDRESS]:PORT");
        }
        const auto colon = rest.rfind(':');
        out.host = std::string(rest.substr(0, colon));
        port = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
    if (out.host.empty()) {
        out.host = "localhost";
    }
    // A name or an IPv4 address; in brackets, an IPv6 address (with a zone after %).
    const bool v6 = rest.starts_with('[');
    const bool plain = std::all_of(out.host.begin(), out.host.end(), [v6](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_' || (v6 && (c == ':' || c == '%'));
    });
    if (!plain || (v6 && out.host.find(':') == std::string::npos)) {
        return bad_host(whole, "the host must be a name, an IPv4 address, or an IPv6 address in brackets");
    }
    unsigned number = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (!port.empty() &&
        (ec != std::errc() || end != port.data() + port.size() || number == 0 || number > 65535)) {
        return bad_host(whole, "the port must be a number from 1 to 65535");
    }
    out.port = port.empty() ? std::string("2375") : std::to_string(number);
    return {};
}

std::string home_directory(env_lookup env) {
    if (auto home = env("HOME"); home && !home->empty()) {
        return *home;
    }
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
        found->pw_dir != nullptr) {
        return found->pw_dir;
    }
    return "/";
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

} // namespace

std::string engine_endpoint::url() const {
    if (transport == engine_transport::unix_socket) {
        return "unix://" + path;
    }
    const bool v6 = host.find(':') != std::string::npos;
    return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + port;
}

namespace {

// Where the TLS files are: ca.pem, and cert.pem/key.pem when both are there (as the CLI: a client certificate
// that is not there is not sent, and the engine then refuses the connection if it requires one, which
// engine_tls explains); one without the other is an error.
boost::system::result<void, relay_error> tls_files_in(const std::string& directory, engine_endpoint& out) {
    out.transport = engine_transport::tls;
    out.tls.directory = directory;
    out.tls.ca = directory + "/ca.pem";
    const std::string cert = directory + "/cert.pem";
    const std::string key = directory + "/key.pem";
    const bool has_cert = exists(cert);
    const bool has_key = exists(key);
    if (has_cert != has_key) {
        return relay_error{relay_errc::usage,
                           (has_cert ? cert + " is there but " + key : key + " is there but " + cert) +
                               " is not: the client certificate needs both"};
    }
    if (has_cert) {
        out.tls.cert = cert;
        out.tls.key = key;
    }
    return {};
}

// unix://PATH, tcp://HOST[:PORT], HOST:PORT: the transport is unix_socket or tcp (TLS is decided after).
boost::system::result<engine_endpoint, relay_error> parse_host(const std::string& host) {
    engine_endpoint out;
    const auto scheme_end = host.find("://");
    const std::string scheme = scheme_end == std::string::npos ? "tcp" : host.substr(0, scheme_end);
    const std::string_view rest = scheme_end == std::string::npos
                                      ? std::string_view(host)
                                      : std::string_view(host).substr(scheme_end + 3);
    if (scheme == "unix") {
        if (rest.empty()) {
            return bad_host(host, "unix:// needs the socket's path");
        }
        out.path = std::string(rest);
        return out;
    }
    if (scheme != "tcp") {
        return bad_host(host, "the relay reaches the engine over unix:// or tcp:// (with TLS when "
                              "DOCKER_TLS_VERIFY is set); " +
                                  scheme + ":// is not supported");
    }
    if (auto parsed = parse_tcp(host, rest, out); !parsed) {
        return parsed.error();
    }
    out.transport = engine_transport::tcp;
    return out;
}

relay_error unverified(const std::string& what) {
    return relay_error{relay_errc::usage,
                       what + " asks for TLS without checking who the engine is; the relay sends the "
                              "subject's credentials over this connection, so it always verifies"};
}

relay_error plain_to_tls_port(const engine_endpoint& out) {
    return relay_error{relay_errc::usage,
                       "DOCKER_HOST " + out.url() +
                           ": port 2376 is the engine's TLS port, and DOCKER_TLS_VERIFY is not set; set "
                           "DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (the directory of ca.pem, "
                           "cert.pem and key.pem), or name the engine's plain-TCP port"};
}

// A docker CLI file (config.json, a context's meta.json): small, so anything past 1 MiB is not one.
std::optional<std::string> read_small_file(const std::string& path) {
    auto text = posix::read_file(path, std::size_t{1} << 20U);
    return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

// The docker CLI's selected context when neither --docker-host nor DOCKER_HOST names the engine:
// DOCKER_CONTEXT, else config.json's currentContext. "default" (or none) leaves the environment's rules.
// A context is CONFIG/contexts/meta/<sha256 of its name>/meta.json (Endpoints.docker.Host, SkipTLSVerify)
// with its TLS files, if any, in CONFIG/contexts/tls/<same>/docker/.
boost::system::result<std::optional<engine_endpoint>, relay_error> docker_context(env_lookup env,
                                                                                  const std::string& config) {
    std::string name = env("DOCKER_CONTEXT").value_or("");
    std::string selected_by = "DOCKER_CONTEXT";
    if (name.empty()) {
        const auto text = read_small_file(config + "/config.json");
        if (!text) {
            return std::optional<engine_endpoint>();
        }
        const auto parsed = contracts::parse_object(*text, std::size_t{1} << 20U);
        if (!parsed) {
            return relay_error{relay_errc::usage, config + "/config.json is not a JSON object"};
        }
        if (const auto* current = parsed->if_contains("currentContext"); current && current->is_string()) {
            name = std::string(current->get_string());
        }
        selected_by = config + "/config.json";
    }
    if (name.empty() || name == "default") {
        return std::optional<engine_endpoint>();
    }
    const std::string id = contracts::sha256_hex(name);
    const std::string meta_path = config + "/contexts/meta/" + id + "/meta.json";
    const auto meta_text = read_small_file(meta_path);
    auto context_error = [&](const std::string& why) {
        return relay_error{relay_errc::usage,
                           "docker context " + name + " (selected by " + selected_by + ") " + why};
    };
    if (!meta_text) {
        return context_error("does not exist (no " + meta_path + ")");
    }
    const auto meta = contracts::parse_object(*meta_text, std::size_t{1} << 20U);
    const boost::json::value* endpoint = nullptr;
    if (meta) {
        if (const auto* endpoints = meta->if_contains("Endpoints"); endpoints && endpoints->is_object()) {
            endpoint = endpoints->as_object().if_contains("docker");
        }
    }
    const boost::json::value* host =
        endpoint != nullptr && endpoint->is_object() ? endpoint->as_object().if_contains("Host") : nullptr;
    if (host == nullptr || !host->is_string()) {
        return context_error("has no docker endpoint host in " + meta_path);
    }
    auto out = parse_host(std::string(host->get_string()));
    if (!out) {
        return context_error("names an engine the relay cannot use: " + out.error().message);
    }
    const std::string tls = config + "/contexts/tls/" + id + "/docker";
    const bool has_tls = exists(tls + "/ca.pem") || exists(tls + "/cert.pem") || exists(tls + "/key.pem");
    const auto* skip = endpoint->as_object().if_contains("SkipTLSVerify");
    if (out->transport == engine_transport::tcp && skip != nullptr && skip->is_bool() && skip->get_bool()) {
        return unverified("docker context " + name + " (SkipTLSVerify)");
    }
    if (out->transport == engine_transport::tcp && has_tls) {
        if (auto files = tls_files_in(tls, *out); !files) {
            return files.error();
        }
    } else if (out->transport == engine_transport::tcp && out->port == tls_port) {
        return context_error("names an engine the relay cannot use: " + plain_to_tls_port(*out).message);
    }
    out->context = name;
    return std::optional<engine_endpoint>(std::move(*out));
}

std::string config_directory(env_lookup env) {
    auto config = env("DOCKER_CONFIG");
    return config && !config->empty() ? *config : home_directory(env) + "/.docker";
}

} // namespace

boost::system::result<engine_endpoint, relay_error>
resolve_engine_endpoint(const std::optional<std::string>& docker_host, env_lookup env) {
    const bool verify = non_empty(env, "DOCKER_TLS_VERIFY");
    std::string host = docker_host ? trimmed(*docker_host) : trimmed(env("DOCKER_HOST").value_or(""));
    if (host.empty()) {
        // As the CLI: a selected context applies when no host is named, whatever the TLS variables say.
        auto context = docker_context(env, config_directory(env));
        if (!context) {
            return context.error();
        }
        if (*context) {
            return std::move(**context);
        }
    }
    if (non_empty(env, "DOCKER_TLS") && !verify) {
        auto refused = unverified("DOCKER_TLS without DOCKER_TLS_VERIFY");
        refused.message += ": set DOCKER_TLS_VERIFY=1 (and DOCKER_CERT_PATH to the directory of ca.pem, "
                           "cert.pem and key.pem)";
        return refused;
    }
    if (host.empty()) {
        host = std::string(verify ? default_tls_host : default_socket);
    }
    auto out = parse_host(host);
    if (!out || out->transport == engine_transport::unix_socket) {
        return out; // a local socket: TLS settings do not apply to it
    }
    if (!verify) {
        if (out->port == tls_port) {
            return plain_to_tls_port(*out);
        }
        return out;
    }
    auto directory = env("DOCKER_CERT_PATH");
    if (auto files =
            tls_files_in(directory && !directory->empty() ? *directory : config_directory(env), *out);
        !files) {
        return files.error();
    }
    return out;
}

} // namespace maka_eval::relay
