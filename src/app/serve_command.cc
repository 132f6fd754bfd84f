// `trib serve RUN_DIR --listen HOST:PORT`: the run's model over HTTP, hot-reloading newer
// checkpoints (serve/prediction_server.h). SIGTERM stops it cleanly; so does Ctrl-C.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "app/commands.h"
#include "serve/prediction_server.h"
#include "trib/core/error.h"
#include "trib/core/termination_signal.h"

namespace trib::app {

namespace {

// --token-file (created with a fresh token when missing), else $TRIB_SERVE_TOKEN, else none.
std::optional<net::ClusterSecret> load_token(const std::string& token_file, const Log& log) {
  if (!token_file.empty()) {
    bool created = false;
    net::ClusterSecret token = net::ClusterSecret::load_or_create(token_file, created);
    if (created) log.info("created a bearer token in {} (mode 600): send \"Authorization: Bearer <its text>\"", token_file);
    return token;
  }
  if (const char* env = std::getenv("TRIB_SERVE_TOKEN"); env && *env)
    return net::ClusterSecret::from_env("TRIB_SERVE_TOKEN");
  return std::nullopt;
}

}  // namespace

int run_serve(const ServeArgs& args, const Log& log) {
  TerminationSignal terminate;  // before any thread starts: they inherit its blocked SIGTERM
  serve::ServeOptions o;
  o.listen = net::parse_host_port(args.listen, "127.0.0.1", {.what = "--listen"});
  o.token = load_token(args.token_file, log);
  o.max_body_bytes = args.max_body_bytes;
  o.max_batch = args.max_batch;
  o.poll = std::chrono::milliseconds(args.poll_ms);
  o.engine = EngineOptions{args.threads, 1};
  // A run started alongside writes config.yaml once its inputs are checked (and, for a stream
  // job, its broker is up): wait for it.
  const std::filesystem::path config = std::filesystem::path(args.run_dir) / "config.yaml";
  if (args.wait && !std::filesystem::exists(config)) {
    log.info("waiting for {} (a run starting)", config.string());
    while (!std::filesystem::exists(config)) {
      if (terminate.received()) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  onnx_export::RunModel run = onnx_export::load_run_model(args.run_dir);
  const std::string name = run.job.name;
  serve::PredictionServer server(std::move(run), o, log);
  const std::uint16_t port = server.bind();
  fmt::print("serving {} ({}) on http://{}: POST /v1/predict{}\n", args.run_dir, name,
             net::format_host_port(o.listen.host, port), o.token ? " (bearer token required)" : "");
  std::fflush(stdout);
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    while (!done && !terminate.received()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  server.run();
  done = true;
  stopper.join();
  return 0;
}

}  // namespace trib::app
