// murmur::topology: communication graphs, mixing matrices and how fast they mix.
//
// Decentralized learning converges as fast as its graph mixes, and a node
// sends one model per neighbour per round: a topology is picked by its
// spectral gap and its degree. This module builds graphs (generators.h,
// edge_list.h), turns them into mixing matrices (weights.h,
// mixing_matrix.h), serves them round by round with churn (schedule.h,
// factory.h) and measures them (analysis.h, spectral.h). See docs/topology.md.
//
// Thread-safety: see each header; graphs and matrices are immutable values.
#pragma once

#include "topology/analysis.h"
#include "topology/edge_list.h"
#include "topology/factory.h"
#include "topology/generators.h"
#include "topology/graph.h"
#include "topology/mixing_matrix.h"
#include "topology/report.h"
#include "topology/schedule.h"
#include "topology/spectral.h"
#include "topology/weights.h"
