// What the docker backend does when its helper vanished without a report, as one function over three steps,
// so that a unit test drives every branch with recorded engine replies on the relay clock.
//
// First what the engine says of the container: an engine that does not answer, or a paused container, is
// asked again for the diagnosis share of the settle span; a container seen stopped is watched for the restart
// window (`docker restart` stops it first), into the destroy reserve if need be, since a stopped container is
// never destroyed. A container that no longer runs, or was restarted, has nothing left to stop and is left as
// it is for whoever debugs it. Only a container that runs as it did gets a fresh helper (within the upload
// share) and a root `cancel` (by the settle deadline); a cancel that fails is followed by a short watch,
// because a container being killed still reads as running for a moment after its execs end.
#pragma once

#include "relay/backends/container_diagnosis.hpp"
#include "relay/trial/backend.hpp"

#include <chrono>
#include <functional>

#include <boost/asio/awaitable.hpp>

namespace maka_eval::relay {

struct recovery_steps {
    // The engine's inspect of the container, diagnosed against its start (docker_backend: inspect_container
    // and diagnose_container).
    std::function<asio::awaitable<container_diagnosis>()> diagnose;
    // Puts a fresh copy of the helper in; empty when the user mounted one. Cut off at its share.
    std::function<asio::awaitable<void>()> refresh_helper;
    // A root `cancel` of the vanished helper's scope, given `runs_for`. Cut off at the settle deadline.
    std::function<asio::awaitable<recovery>(std::chrono::milliseconds runs_for)> cancel;
};

// What the recovery ends with for each condition; nullopt: the container runs as it did (cancel it).
[[nodiscard]] std::optional<recovery> recovery_of(container_condition condition);

asio::awaitable<recovery> recover_container(const recovery_steps& steps, recovery_window window);

} // namespace maka_eval::relay
