// `maka-eval-helper pin-proxy --host H [--ipv4-file F] [--hosts-file F]`: point H at the proxy's IPv4.
//
// The host is validated before anything is read, the published address is read and validated as the
// sidecar's network-policy reads it, and /etc/hosts is rewritten *in place* (written from offset 0, then
// truncated): under Docker it is a bind mount, and rename(2) over it fails. Prints the `pinned` message.
// Run as root (the relay uses a root exec for it).
#include "contracts/session_messages.hpp"
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"
#include "in_container/process/root_owned.hpp"
#include "policy/egress_gate.hpp"
#include "policy/hosts_file.hpp"
#include "policy/proxy_host.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

int fail(std::string_view message) {
    log_line(std::string("pin-proxy: ") + std::string(message));
    return exit_failed;
}

} // namespace

int pin_proxy_command(std::span<const std::string_view> args) {
    std::string host;
    std::string ipv4_file(policy::proxy_ipv4_path);
    std::string hosts_file = "/etc/hosts";
    command_options options(
        "pin-proxy", "usage: maka-eval-helper pin-proxy --host HOST [--ipv4-file FILE] [--hosts-file FILE]");
    if (!options.text("--host", host)
             .text("--ipv4-file", ipv4_file)
             .text("--hosts-file", hosts_file)
             .parse(args)) {
        return exit_usage;
    }
    auto checked = policy::proxy_host_from(host);
    if (!checked) {
        return fail(checked.error().message);
    }
    // Both read or written as root on a subject's behalf: only what root put there is taken (root_owned.hpp).
    auto address_fd = open_root_owned(ipv4_file, O_RDONLY);
    if (!address_fd) {
        return fail("the proxy's published address cannot be trusted: " + address_fd.error());
    }
    const auto published = read_all(*address_fd, 4096);
    ::close(*address_fd);
    const auto ip = published ? policy::published_ipv4(*published) : std::nullopt;
    if (!ip) {
        return fail("the proxy's published address in " + ipv4_file + " is not an IPv4 address");
    }
    auto hosts_fd = open_root_owned(hosts_file, O_RDWR);
    if (!hosts_fd) {
        return fail("cannot pin the proxy in " + hosts_file + ": " + hosts_fd.error());
    }
    const int fd = *hosts_fd;
    auto old_text = read_all(fd, 16U << 20U);
    const std::string new_text = policy::rewrite_hosts(old_text ? *old_text : std::string(), *checked, *ip);
    const bool written = old_text && ::lseek(fd, 0, SEEK_SET) == 0 && write_all(fd, new_text) &&
                         ::ftruncate(fd, static_cast<off_t>(new_text.size())) == 0 && ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    if (!written) {
        return fail(hosts_file + ": " + std::strerror(saved));
    }
    return write_all(STDOUT_FILENO, contracts::serialize(contracts::pinned_message{*ip, *checked}))
               ? exit_ok
               : exit_failed;
}

} // namespace maka_eval::in_container
