// `allot notebook create|list|open|stop|delete` (docs/notebooks.md): a
// notebook is a Workload of type notebook, made from a Notebook manifest.
#pragma once

#include <string>

#include "cli/client.h"

namespace allot::cli {

struct NotebookFlags {
  std::string tenant;  // -t; default: the token's, else default.
  std::string name;
  std::string queue;
  int gpus = 0;
  std::string mig;  // A MIG profile instead of whole GPUs: 1g.10gb.
  std::string image;
  std::string cpu, memory;
  std::string idle_after;  // Default: the Notebook's (60m).
  bool browser = false;    // open: start a browser on the link.
};

// The Notebook manifest `create` applies (exposed for tests).
std::string NotebookManifest(const NotebookFlags& f, const std::string& tenant);

int CmdNotebookCreate(const ClientFlags& c, const NotebookFlags& f);
int CmdNotebookList(const ClientFlags& c, const NotebookFlags& f);
int CmdNotebookOpen(const ClientFlags& c, const NotebookFlags& f);
// stop: parks it (its pods stop, its GPUs go back, its files and its
// quota stay; opening it again resumes it).
int CmdNotebookStop(const ClientFlags& c, const NotebookFlags& f);
int CmdNotebookDelete(const ClientFlags& c, const NotebookFlags& f);

}  // namespace allot::cli
