// Which containers already hold this helper, as far as relays on this host know: so that the first trial
// in a fresh container uploads the helper at once, instead of learning from a failing exec (an exec create,
// a failed start and exit-code polls), and later trials skip the upload.
//
// One empty file per (container id, helper content name) in a directory only this user can enter:
// $XDG_RUNTIME_DIR/maka-eval-relay, else /tmp/maka-eval-relay-<uid>; used only when it is a real directory
// owned by us with no access for others. Nothing secret is in it. A wrong entry (the helper removed from a
// container) costs only the old path: the exec fails and the helper is uploaded again. Entries older than a
// day go when one is added: one container per trial is the normal case, and containers rarely outlive it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::relay {

class install_record {
  public:
    // The record at its usual place, or at `directory` (tests); without a usable directory every lookup
    // misses and nothing is recorded.
    explicit install_record(std::optional<std::string> directory = std::nullopt);

    [[nodiscard]] bool contains(std::string_view container_id, std::string_view helper) const;
    void add(std::string_view container_id, std::string_view helper) const;
    // The container is gone (destroyed by us): its entries go too.
    void forget(std::string_view container_id) const;

  private:
    [[nodiscard]] std::optional<std::string> entry(std::string_view container_id,
                                                   std::string_view helper) const;
    std::optional<std::string> directory_;
};

} // namespace maka_eval::relay
