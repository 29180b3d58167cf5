// Where the Docker engine is and how to reach it, decided from the environment as the docker CLI decides it.
//
// DOCKER_HOST (or --docker-host) names the engine: `unix://PATH`, `tcp://HOST[:PORT]`, or `HOST:PORT` (tcp).
// DOCKER_TLS_VERIFY non-empty (any value, as the CLI) turns on mutual TLS with verification: the engine's
// certificate must chain to DOCKER_CERT_PATH/ca.pem and name the host, and cert.pem/key.pem (when they exist,
// as the CLI) are presented. DOCKER_CERT_PATH defaults to DOCKER_CONFIG, then ~/.docker. With TLS on and no
// DOCKER_HOST the engine is tcp://localhost:2376; a port left out is 2375, as the CLI.
// When neither --docker-host nor DOCKER_HOST names the engine, the docker CLI's selected context does
// (DOCKER_CONTEXT, else currentContext in DOCKER_CONFIG/config.json): its host and its own TLS files.
// Two deliberate refusals: TLS without verification (DOCKER_TLS alone) — the relay sends the subject's
// credentials over this connection — and plain TCP to port 2376, the TLS port, which would send them in clear
// text to a server that then refuses them anyway. A context with SkipTLSVerify is refused like DOCKER_TLS.
// Only paths are decided here; the files are read when the backend starts (engine_tls.hpp).
#pragma once

#include "relay/support/environment.hpp"
#include "relay/support/error.hpp"

#include <optional>
#include <string>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

enum class engine_transport { unix_socket, tcp, tls };

struct engine_tls_files {
    std::string directory; // where they were looked for (DOCKER_CERT_PATH …), for messages
    std::string ca;
    std::string cert; // empty: no client certificate there (the CLI then sends none)
    std::string key;
};

struct engine_endpoint {
    engine_transport transport = engine_transport::unix_socket;
    std::string path = "/var/run/docker.sock"; // unix_socket
    std::string host;                          // tcp, tls: a name or an address (IPv6 without brackets)
    std::string port;                          // tcp, tls
    engine_tls_files tls;
    std::string context; // the docker CLI context it came from, if any

    // unix:///var/run/docker.sock, tcp://HOST:PORT ([v6]:PORT)
    [[nodiscard]] std::string url() const;
};

// `docker_host`: --docker-host when given, else DOCKER_HOST applies.
[[nodiscard]] boost::system::result<engine_endpoint, relay_error>
resolve_engine_endpoint(const std::optional<std::string>& docker_host, env_lookup env);

} // namespace maka_eval::relay
