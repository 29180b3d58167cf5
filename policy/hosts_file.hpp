// The /etc/hosts rewrite that pins the proxy host, as a pure function of the old text.
//
// Lines whose alias fields (2..NF, split on blanks as awk does) name the host exactly are dropped, comments
// and every other line are kept, and `<ip> <host>` is appended (C23). The caller writes the result over the
// file *in place*: under Docker /etc/hosts is a bind mount, and a rename would fail or detach it.
#pragma once

#include <string>
#include <string_view>

namespace maka_eval::policy {

[[nodiscard]] std::string rewrite_hosts(std::string_view old_text, std::string_view host,
                                        std::string_view ip);

} // namespace maka_eval::policy
