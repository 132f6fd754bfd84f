// The built-in layers, one header each; this one includes them all. Images are NCHW; Dense
// takes [N, features].
#pragma once

#include "trib/nn/activation_layer.h"
#include "trib/nn/avg_pool2d.h"
#include "trib/nn/batch_norm.h"
#include "trib/nn/conv2d.h"
#include "trib/nn/dense.h"
#include "trib/nn/dropout.h"
#include "trib/nn/embedding.h"
#include "trib/nn/flatten.h"
#include "trib/nn/max_pool2d.h"
