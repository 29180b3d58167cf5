// Counting the subject's processes from the kernel's fork events (see fork_events.hpp).
#include "in_container/process/fork_events.hpp"

#include <cerrno>
#include <cstring>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

namespace maka_eval::in_container {

bool fork_events::open() {
    posix::unique_fd sock(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR));
    if (!sock) {
        return false;
    }
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = CN_IDX_PROC;
    address.nl_pid = 0; // the kernel picks it
    if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        return false;
    }
    // A queue deep enough for a burst of the host's forks between two of our reads.
    const int size = 4 << 20;
    (void)::setsockopt(sock.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    // nlmsghdr, cn_msg (its data is a flexible array), then the operation: laid out by hand.
    alignas(nlmsghdr) char request[NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
    nlmsghdr header{};
    header.nlmsg_len = sizeof request;
    header.nlmsg_type = NLMSG_DONE;
    header.nlmsg_pid = static_cast<__u32>(::getpid());
    cn_msg message{};
    message.id.idx = CN_IDX_PROC;
    message.id.val = CN_VAL_PROC;
    message.len = sizeof(proc_cn_mcast_op);
    const proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
    std::memcpy(request, &header, sizeof header);
    std::memcpy(request + NLMSG_HDRLEN, &message, sizeof message);
    std::memcpy(request + NLMSG_HDRLEN + sizeof message, &op, sizeof op);
    if (::send(sock.get(), request, sizeof request, 0) != static_cast<ssize_t>(sizeof request)) {
        return false;
    }
    socket_ = std::move(sock);
    return true;
}

void fork_events::drain() {
    if (!socket_) {
        return;
    }
    alignas(nlmsghdr) char buffer[8192];
    while (true) {
        const ssize_t got = ::recv(socket_.get(), buffer, sizeof buffer, 0);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == ENOBUFS) {
                overflowed_ = true; // events were lost: the count may be short
                continue;
            }
            return; // EAGAIN: all read
        }
        // Each datagram: nlmsghdr, cn_msg, proc_event, copied out (the buffer holds no typed objects).
        for (std::size_t at = 0; at + NLMSG_HDRLEN <= static_cast<std::size_t>(got);) {
            nlmsghdr header{};
            std::memcpy(&header, buffer + at, sizeof header);
            if (header.nlmsg_len < NLMSG_HDRLEN || at + header.nlmsg_len > static_cast<std::size_t>(got)) {
                break;
            }
            if (header.nlmsg_len >= NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_event))) {
                proc_event event{};
                std::memcpy(&event, buffer + at + NLMSG_HDRLEN + sizeof(cn_msg), sizeof event);
                const auto& fork = event.event_data.fork;
                // A new process (not a thread) whose parent process is one of the subject's.
                if (event.what == proc_event::PROC_EVENT_FORK && fork.child_pid == fork.child_tgid &&
                    tree_.contains(fork.parent_tgid)) {
                    tree_.insert(fork.child_tgid);
                }
            }
            at += NLMSG_ALIGN(header.nlmsg_len);
        }
    }
}

} // namespace maka_eval::in_container
