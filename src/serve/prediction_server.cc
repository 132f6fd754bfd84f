#include "serve/prediction_server.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "serve/bearer_auth.h"
#include "serve/binary_codec.h"
#include "serve/checkpoint_watcher.h"
#include "serve/json_codec.h"
#include "serve/predictor.h"
#include "serve/request_error.h"
#include "trib/core/error.h"

namespace trib::serve {

using nlohmann::json;

struct PredictionServer::Impl {
  Impl(onnx_export::RunModel r, ServeOptions o, const Log& l)
      : run(std::move(r)),
        options(std::move(o)),
        log(l.named("trib.serve")),
        auth(options.token),
        predictor(run, options.engine),
        watcher(run, slot, log) {
    spec.input = run.input;
    spec.max_batch = options.max_batch;
    if (run.job.data.stream()) spec.schema = &run.job.data.schema;
  }

  void install_routes();
  void predict(const httplib::Request& req, httplib::Response& res);
  json model_info() const;

  onnx_export::RunModel run;
  ServeOptions options;
  Log log;
  BearerAuth auth;
  RequestSpec spec;
  ModelSlot slot;
  Predictor predictor;
  CheckpointWatcher watcher;
  httplib::Server http;
};

namespace {

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", message}}.dump(), "application/json");
}

std::string media_type(const httplib::Request& req) {
  std::string t = req.get_header_value("Content-Type");
  t = t.substr(0, t.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

}  // namespace

json PredictionServer::Impl::model_info() const {
  std::shared_ptr<const Snapshot> s = slot.current();
  json info = {{"name", run.job.name},
               {"input", run.input.dims()},
               {"classes", run.classes},
               {"step", s ? json(s->step) : json(nullptr)},
               {"checkpoint", s ? json(s->dir.string()) : json(nullptr)},
               {"max_batch", options.max_batch},
               {"binary_format", "TRBT version 1"}};
  if (spec.schema) info["event_fields"] = spec.schema->features;
  return info;
}

void PredictionServer::Impl::predict(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<const Snapshot> served = slot.current();  // this request's model, to its end
  if (!served) {
    send_error(res, 503, "no checkpoint yet: the run has not written one (the server loads it when it does)");
    return;
  }
  const std::string type = media_type(req);
  const bool binary = type == "application/octet-stream";
  // curl -d sends its default form type: read as JSON, so that the plainest command works.
  if (!binary && !type.empty() && type != "application/json" && type != "application/x-www-form-urlencoded")
    throw RequestError(415, fmt::format("Content-Type {}: expected application/json or application/octet-stream", type));
  Tensor features = binary ? parse_binary_request(req.body, spec) : parse_json_request(req.body, spec);
  Tensor logits = predictor.logits(features, *served->vars);
  res.set_header("X-Trib-Step", std::to_string(served->step));
  if (binary)
    res.set_content(encode_binary(logits), "application/octet-stream");
  else
    res.set_content(json_response(logits, served->step), "application/json");
}

void PredictionServer::Impl::install_routes() {
  http.set_payload_max_length(options.max_body_bytes);
  http.set_keep_alive_max_count(10000);  // a client's connection serves many requests
  http.set_tcp_nodelay(true);            // small responses go out at once
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (auto why = auth.refusal(req.get_header_value("Authorization"))) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, *why);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.Post("/v1/predict", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      predict(req, res);
    } catch (const RequestError& e) {
      send_error(res, e.status(), e.what());
    }
  });
  http.Get("/v1/model", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(model_info().dump(), "application/json");
  });
  http.Get("/v1/health", [this](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const Snapshot> s = slot.current();
    if (!s) {
      send_error(res, 503, "no checkpoint yet");
      return;
    }
    res.set_content(json{{"status", "serving"}, {"step", s->step}}.dump(), "application/json");
  });
  // Errors httplib answers itself (an unknown path, a body over the limit) get a line too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                      httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413)
      send_error(res, 413, fmt::format("the body is over {} bytes (--max-body-bytes)", options.max_body_bytes));
    else if (res.status == 404)
      send_error(res, 404, fmt::format("no endpoint {} {}: POST /v1/predict, GET /v1/model or GET /v1/health",
                                       req.method, req.path));
    else
      send_error(res, res.status, fmt::format("HTTP status {}", res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log.error("{} {}: {}", req.method, req.path, what);
    send_error(res, 500, what);
  });
}

PredictionServer::PredictionServer(onnx_export::RunModel run, ServeOptions options, const Log& log) {
  TRIB_CHECK(options.token || is_loopback(options.listen.host), InvalidArgument,
             "--listen {} is beyond loopback: requests need a bearer token; give --token-file FILE (created if "
             "missing) or set TRIB_SERVE_TOKEN (hex, 16 bytes or more)",
             options.listen.to_string());
  TRIB_CHECK(options.max_batch >= 1, InvalidArgument, "--max-batch {}: expected 1 or more", options.max_batch);
  impl_ = std::make_unique<Impl>(std::move(run), std::move(options), log);
  impl_->install_routes();
}

PredictionServer::~PredictionServer() = default;

std::uint16_t PredictionServer::bind() {
  impl_->watcher.poll_once();
  if (!impl_->slot.current())
    impl_->log.warn("{} has no checkpoint yet: predictions get 503 until training writes one",
                    impl_->run.run_dir.string());
  const net::HostPort& at = impl_->options.listen;
  int port = at.port;
  if (port == 0)
    port = impl_->http.bind_to_any_port(at.host);
  else if (!impl_->http.bind_to_port(at.host, port))
    port = -1;
  TRIB_CHECK(port > 0, IoError, "cannot listen on {} (in use, or not an address of this host)", at.to_string());
  return static_cast<std::uint16_t>(port);
}

void PredictionServer::run() {
  impl_->watcher.start(impl_->options.poll);
  impl_->http.listen_after_bind();
}

void PredictionServer::stop() { impl_->http.stop(); }

}  // namespace trib::serve
