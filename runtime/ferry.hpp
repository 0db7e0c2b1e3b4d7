// ferry.hpp: the umbrella header of the installed package
// (<ferry/ferry.hpp>): everything a program of its own needs to run nodes,
// pass payloads by handle, call named handlers, move GPU memory and serve
// its own worker types.
//
//   ferry::node            a node (runtime/node.hpp) and its configuration
//   ferry::blocking_client handles from plain code: stage, get, release
//   ferry::messenger_client named handlers from plain code: bind, call, stream
//   ferry::gpu_payloads    device memory as a payload (staging/)
//   ferry::remote_staging  a peer's device range read or written (docs/remote-staging.md)
//   ferry::transfer_batch  one ordered submission mixing both and host gets
//   ferry::run_node        a node binary serving the program's worker types
//   node_context, worker_registry   what a worker actor is given
//   atoms, errc            the messages and error codes of the actor API
#pragma once

#include "actors/messenger/messenger_interface.hpp"
#include "actors/node_context.hpp"
#include "actors/rendezvous/consumer_service.hpp"
#include "actors/rendezvous/owner_interface.hpp"
#include "protocol/atoms.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/checksum.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/errors.hpp"
#include "protocol/messenger_wire.hpp"
#include "runtime/blocking_client.hpp"
#include "runtime/gpu_payloads.hpp"
#include "runtime/messenger_client.hpp"
#include "runtime/node.hpp"
#include "runtime/node_config.hpp"
#include "runtime/remote_staging.hpp"
#include "runtime/run_node.hpp"
#include "runtime/transfer_batch.hpp"
#include "runtime/version.hpp"
