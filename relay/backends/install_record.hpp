// Which containers already hold this helper, as far as relays on this host know: so that the first trial
// in a fresh container uploads the helper at once, instead of learning from a failing exec (an exec create,
// a failed start and exit-code polls), and later trials skip the upload.
//
// One directory per container id, holding an empty file per helper content name that went in, in a
// directory only this user can enter:
// $XDG_RUNTIME_DIR/maka-eval-relay, else /tmp/maka-eval-relay-<uid>. The relay may run as root with another
// user's XDG_RUNTIME_DIR (`su` without `-`): so the parent must be ours (or root's) and not open to others
// (or sticky, as /tmp), the directory is opened once without following links and checked (a real directory,
// ours, no access for others), and every later step is relative to that descriptor — nobody can swap it
// for a link and have us create or delete files elsewhere. A parent or directory that fails is not used, and
// `unused_because()` says why (the relay logs it: every trial then pays the cold install). Nothing secret is
// in it. A wrong entry (the helper removed from a container) costs only the old path: the exec fails and
// the helper is uploaded again. Every lookup is one stat, however many trials ran (a flat listing of a day's
// containers cost a cold trial 1 ms per 1,500); entries older than a day go at most once an hour, when a
// relay starts: one container per trial is the normal case, and containers rarely outlive it. The flat
// `ID+HELPER` files of earlier builds are moved into this layout then.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>

namespace maka_eval::relay {

class install_record {
  public:
    // The record at its usual place, or at `directory` (tests); without a usable directory every lookup
    // misses and nothing is recorded.
    explicit install_record(std::optional<std::string> directory = std::nullopt);

    install_record(const install_record&) = delete;
    install_record& operator=(const install_record&) = delete;
    install_record(install_record&& other) noexcept;
    install_record& operator=(install_record&&) = delete;
    ~install_record();

    [[nodiscard]] bool contains(std::string_view container_id, std::string_view helper) const;
    // Whether any helper went into the container (an earlier trial ran there, perhaps a root subject that
    // changed the shell the cold install would run).
    [[nodiscard]] bool knows(std::string_view container_id) const;
    void add(std::string_view container_id, std::string_view helper) const;
    // A subject ran as root there (or with capabilities): from then on the container is that subject's, and
    // what it left may read a later trial's secrets (docs/security.md). `description` says which trial
    // ("2026-12-05T19:40:02Z, subject uid 0"); the first one is kept.
    void mark_root_trial(std::string_view container_id, std::string_view description) const;
    // That trial's description, if one was recorded.
    [[nodiscard]] std::optional<std::string> root_trial(std::string_view container_id) const;
    // The container is gone (destroyed by us): its entries go too.
    void forget(std::string_view container_id) const;

    // The helper's SHA-256 as remembered for the file `info` describes: the same device, inode, size,
    // modification and change time (a write or a replacement changes one of them; the change time cannot be
    // set back). Hashing the megabyte was the longest step before a warm trial's exec. nullopt when not
    // remembered.
    // `memo` names the entry: the helper's by default, the relay's own binary under relay_digest_memo (a
    // signed result names it, and an unstripped build is tens of megabytes).
    [[nodiscard]] std::optional<std::string>
    remembered_digest(const struct stat& info, std::string_view memo = helper_digest_memo) const;
    // Remembers it (one entry per memo: the last file hashed), unless the file changed within the last
    // seconds, where a write in the same clock tick would not show in its times.
    void remember_digest(const struct stat& info, const std::string& digest,
                         std::string_view memo = helper_digest_memo) const;
    static constexpr std::string_view helper_digest_memo = ".helper-digest";
    static constexpr std::string_view relay_digest_memo = ".relay-digest";

    // Why no record is kept (empty when one is).
    [[nodiscard]] const std::string& unused_because() const { return unused_because_; }

  private:
    // Once an hour at most (a marker's time says when it last ran): entries older than a day removed, flat
    // entries of earlier builds moved into their container's directory.
    void tidy() const;

    int directory_ = -1; // the record's directory, checked once; -1: none usable
    std::string unused_because_;
};

} // namespace maka_eval::relay
