// `trib serve`: a run's model behind HTTP (cpp-httplib), answering with the newest checkpoint
// of the run, reloaded as training writes new ones (checkpoint_watcher.h).
//
//   POST /v1/predict   JSON (json_codec.h) or Content-Type: application/octet-stream
//                      (binary_codec.h); the checkpoint's step comes back in X-Trib-Step
//   GET  /v1/model     the input shape, the classes, the checkpoint served
//   GET  /v1/health    200 once a checkpoint is served, 503 before
//
// A refused request gets a 4xx and {"error": "<one line naming the problem>"}: 400 (shape,
// type, NaN), 401 (token), 413 (body or batch over the limit), 415 (content type), 503 (no
// checkpoint yet). docs/serving.md has the details.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "export/run_model.h"
#include "trib/core/log.h"
#include "trib/engine/context.h"
#include "trib/net/cluster_secret.h"
#include "trib/net/host_port.h"

namespace trib::serve {

struct ServeOptions {
  net::HostPort listen{"127.0.0.1", 8500};  // port 0: any free port (bind() says which)
  // Required when `listen` is beyond loopback (bearer_auth.h); optional, and then enforced,
  // on loopback.
  std::optional<net::ClusterSecret> token;
  std::size_t max_body_bytes = 64u << 20;
  std::int64_t max_batch = 1024;
  std::chrono::milliseconds poll{500};  // how often the checkpoints directory is looked at
  EngineOptions engine{1, 1};
};

class PredictionServer {
 public:
  // Throws InvalidArgument when `listen` is beyond loopback and no token is given.
  PredictionServer(onnx_export::RunModel run, ServeOptions options, const Log& log);
  ~PredictionServer();

  // Loads the newest checkpoint there is (a run with none yet is served once it writes one)
  // and binds the listener. Returns the port bound. Throws IoError naming the address.
  std::uint16_t bind();
  // Serves until stop(), reloading newer checkpoints meanwhile.
  void run();
  // From any thread (a signal watcher).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trib::serve
