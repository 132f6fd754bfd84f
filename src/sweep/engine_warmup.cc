#include "engine_warmup.h"

#include "trib/core/error.h"
#include "trib/engine/context.h"
#include "trib/train/model_graph.h"

namespace trib::sweep {

void warm_engine(const config::JobConfig& job) {
  try {
    EngineContext engine(EngineOptions{1, 1});
    train::ModelSpec spec{config::build_model(job.model), Shape(job.model.input), job.model.classes, job.training.seed};
    for (bool training : {true, false}) {
      const std::int64_t batch = training ? job.training.batch : job.training.eval_batch;
      std::vector<std::int64_t> dims{batch};
      dims.insert(dims.end(), spec.input.dims().begin(), spec.input.dims().end());
      const Tensor features = Tensor::zeros(DType::f32, Shape(dims));
      const Tensor labels = Tensor::zeros(DType::i32, Shape{batch});
      train::ModelGraph graph(spec, batch, training, engine);
      VariableStore vars;
      train::initialize_parameters(graph.parameters(), spec.seed, vars);
      graph.run(features, labels, vars);
    }
  } catch (const Error&) {
    // The trials build the same model and report what is wrong with it.
  }
}

}  // namespace trib::sweep
