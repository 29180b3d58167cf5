// What each backend is given: its own options, nothing of the others' or of the trial's.
//
// The CLI (relay/cli/options.cpp) reads them from the command line and the environment; the factory picks
// the backend by which of them it gets.
#pragma once

#include "contracts/defaults.hpp"
#include "relay/engine/engine_endpoint.hpp"

#include <chrono>
#include <string>
#include <variant>

namespace maka_eval::relay {

// Which maka-eval-helper goes into the environment (helper_binary.hpp).
struct helper_source {
    std::string on_host;        // --helper; empty: beside the relay, the build tree, PATH
    std::string in_environment; // --helper-in-container: one already there (no upload)
};

// The subject's place in its environment, as every backend takes it.
struct subject_placement {
    std::string cwd;  // empty: the environment's own default (the image's WORKDIR, the runner's, ours)
    std::string user; // docker, local as root: as `docker exec -u` takes it; empty: the default user
};

struct local_options {
    helper_source helper;
    subject_placement subject;
    std::string work_dir; // where scope and artifacts go; empty: a new temporary directory
};

struct docker_options {
    helper_source helper;
    subject_placement subject;
    std::string container; // by name or id, or found by the compose labels below
    std::string compose_project;
    std::string compose_service = "main";
    engine_endpoint engine;
    std::chrono::milliseconds engine_timeout{contracts::defaults::engine_timeout_ms};
    bool keep_leftovers = false; // the helper leaves what earlier trials' subjects left running
};

struct bridge_options {
    helper_source helper;
    subject_placement subject;
    int fd = -1;                // the adapter's socket, inherited
    bool switches_user = false; // the runner's exec honours user=: root steps are possible
    bool fresh = false;         // no trial ran in this environment yet: install first
};

using backend_options = std::variant<local_options, docker_options, bridge_options>;

} // namespace maka_eval::relay
