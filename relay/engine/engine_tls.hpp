// Mutual TLS to a remote Docker engine with OpenSSL: the client context made once from the files
// engine_endpoint found, each connection's expected identity, and failures said so a person can act on them.
//
// The context trusts only DOCKER_CERT_PATH/ca.pem (not the system's roots: the engine's CA is the user's
// own), presents cert.pem/key.pem, and asks for TLS 1.2 or later. Each connection checks that the certificate
// names the host or address it was reached by (OpenSSL's own host check, so a mismatch has its own verify
// code) and sends the name as SNI. The key's bytes are wiped from memory once OpenSSL holds it and never
// appear in a message.
#pragma once

#include "relay/engine/engine_endpoint.hpp"
#include "relay/support/error.hpp"

#include <memory>
#include <string>

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

struct ssl_st;         // OpenSSL's SSL
struct ssl_session_st; // OpenSSL's SSL_SESSION

namespace boost::asio::ssl {
class context;
}

namespace maka_eval::relay {

[[nodiscard]] boost::system::result<std::shared_ptr<boost::asio::ssl::context>, relay_error>
load_engine_tls(const engine_tls_files& files);

// What the verification of one connection's server certificate found wrong, kept for the message.
struct tls_verify_note {
    std::string subject;   // of the certificate that failed
    std::string not_after; // its expiry, when that was the failure
};

// Sets up one connection's SSL object before the handshake: SNI and the identity the certificate must have;
// `note` (owned by the caller, alive during the handshake) learns why verification failed.
[[nodiscard]] bool expect_engine_identity(ssl_st* ssl, const engine_endpoint& engine, tls_verify_note& note);

// The engine's latest resumable TLS session. A trial opens 3 or 4 connections to the engine; resuming skips
// the certificate exchange and both sides' signatures after the first. (With TLS 1.3 the ticket arrives after
// the handshake, so it is taken once an exchange on the connection succeeded.)
class tls_session_cache {
  public:
    void remember(ssl_st* ssl);
    void resume(ssl_st* ssl) const;

  private:
    std::shared_ptr<ssl_session_st> session_;
};

// A failed handshake, or a failed read or write on an established TLS connection (with TLS 1.3 the engine
// refuses a client certificate only after the client's side of the handshake is done).
[[nodiscard]] std::string describe_tls_failure(const boost::system::error_code& ec, ssl_st* ssl,
                                               const tls_verify_note& note, const engine_endpoint& engine);

} // namespace maka_eval::relay
