#pragma once
// `papaya profile --comm`: the link between this host's data-parallel ranks,
// timed and fitted (profiler/comm_link.h, model/parallel/link.h).
#include <string>

#include "cli/report/report.h"

namespace papaya::cli {

// As rank of a job (torchrun's variables) or, without them, starting
// `nproc` ranks here; rank 0 shows the result and, where `out` is given,
// writes it as a link file (configs/schemas/link.schema.json) that --link
// of predict, limits, plan and recommend takes.
void profile_comm(int nproc, double timeout_s, const std::string& out, const Output& output);

}  // namespace papaya::cli
