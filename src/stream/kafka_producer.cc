#include "trib/stream/kafka_producer.h"

#include <atomic>
#include <mutex>

#include "stream/kafka_handles.h"
#include "trib/core/error.h"

namespace trib::stream {

struct KafkaProducer::Impl {
  std::string name;
  std::string bootstrap;
  int timeout_ms = 0;
  detail::KafkaHandle rk;
  std::atomic<std::int64_t> enqueued{0};
  std::atomic<std::int64_t> delivered{0};
  std::atomic<std::int64_t> failed{0};
  mutable std::mutex error_mu;
  std::string last_error;       // of a failed delivery
  std::string last_client_error;  // from the error callback: why the cluster is unreachable

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->delivered.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    self->failed.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(self->error_mu);
    self->last_error = fmt::format("{} [{}]: {}", rd_kafka_topic_name(m->rkt), m->partition,
                                   rd_kafka_err2str(m->err));
  }
  static void on_error(rd_kafka_t*, int, const char* reason, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    std::lock_guard lock(self->error_mu);
    self->last_client_error = reason;
  }
  std::string client_error() const {
    std::lock_guard lock(error_mu);
    return last_client_error;
  }
};

KafkaProducer::KafkaProducer(const KafkaConfig& config, std::string name) : impl_(std::make_unique<Impl>()) {
  validate(config);
  impl_->name = std::move(name);
  impl_->bootstrap = config.bootstrap_servers;
  impl_->timeout_ms = static_cast<int>(config.connect_timeout.count());
  // linger.ms 5: small batches keep event latency (freshness) low and still batch at high rates.
  detail::ConfHandle conf = detail::make_conf(config, {{"linger.ms", "5"}, {"log_level", "2"}});
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &Impl::on_delivery);
  rd_kafka_conf_set_error_cb(conf.get(), &Impl::on_error);
  rd_kafka_conf_set_opaque(conf.get(), impl_.get());
  impl_->rk = detail::make_client(RD_KAFKA_PRODUCER, std::move(conf), impl_->name);
  detail::fetch_metadata(impl_->rk.get(), impl_->bootstrap, impl_->timeout_ms,
                         [this] { return impl_->client_error(); });
}

KafkaProducer::~KafkaProducer() {
  if (impl_ && impl_->rk) rd_kafka_flush(impl_->rk.get(), 5000);
}

void KafkaProducer::produce(std::string_view topic, std::string_view key, std::string_view value,
                            std::int64_t timestamp_ms, std::span<const Header> headers, std::int32_t partition) {
  for (;;) {
    // Headers are handed over to librdkafka only on success, so they are rebuilt per attempt.
    rd_kafka_headers_t* hdrs = nullptr;
    if (!headers.empty()) {
      hdrs = rd_kafka_headers_new(headers.size());
      for (const Header& h : headers)
        rd_kafka_header_add(hdrs, h.name.data(), static_cast<ssize_t>(h.name.size()), h.value.data(),
                            static_cast<ssize_t>(h.value.size()));
    }
    rd_kafka_resp_err_t err = rd_kafka_producev(
        impl_->rk.get(), RD_KAFKA_V_TOPIC(std::string(topic).c_str()),
        RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
        RD_KAFKA_V_TIMESTAMP(timestamp_ms > 0 ? timestamp_ms : 0), RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      impl_->enqueued.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (hdrs != nullptr) rd_kafka_headers_destroy(hdrs);
    // A full local queue is backpressure, not an error: deliver some, then try again.
    TRIB_CHECK(err == RD_KAFKA_RESP_ERR__QUEUE_FULL, InvalidArgument, "{}: cannot produce to topic '{}': {}",
               impl_->name, topic, rd_kafka_err2str(err));
    rd_kafka_poll(impl_->rk.get(), 10);
  }
}

void KafkaProducer::poll() { rd_kafka_poll(impl_->rk.get(), 0); }

bool KafkaProducer::flush(std::chrono::milliseconds timeout) {
  return rd_kafka_flush(impl_->rk.get(), static_cast<int>(timeout.count())) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

int KafkaProducer::partition_count(const std::string& topic) {
  detail::MetadataHandle md =
      detail::fetch_metadata(impl_->rk.get(), impl_->bootstrap, impl_->timeout_ms,
                             [this] { return impl_->client_error(); });
  return detail::partition_count(*md, topic, impl_->bootstrap);
}

ProducerStats KafkaProducer::stats() const {
  ProducerStats s;
  s.enqueued = impl_->enqueued.load();
  s.delivered = impl_->delivered.load();
  s.failed = impl_->failed.load();
  std::lock_guard lock(impl_->error_mu);
  s.last_error = impl_->last_error;
  return s;
}

}  // namespace trib::stream
