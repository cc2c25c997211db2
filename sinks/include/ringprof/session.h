// ringprof/session.h — starting a session with the sinks ringprof ships.
//
//   ringprof::start();                 // settings from the RINGPROF_* variables
//   ringprof::Config c = ringprof::config_from_env();
//   c.dir = "/var/tmp/ringprof";
//   ringprof::start(c);
//
// Defined with the sinks (sinks/src/session_start.cpp), which the recording
// core does not know: start(config, sink) in ringprof/sink.h takes a sink of
// the caller's instead.
#pragma once

#include "ringprof/config.h"

namespace ringprof {

// Starts recording with the sink `config.sink` names (rolling files by
// default). Returns false, after one warning, when recording could not start
// (already on, no memory); the application carries on either way.
bool start(const Config& config);
bool start();  // start(config_from_env())

}  // namespace ringprof
