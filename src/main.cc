// allot: the command-line entry point (CLI11).
//
// Server: `allot serve`. Client verbs talk to a server over its API (see
// cli/client.h for where the server URL and token come from). Offline:
// `allot schedule --dry-run`. Exit codes: 0 success, 1 the server refused
// or could not be reached, 2 usage error or bad input.
#include <CLI/CLI.hpp>

#include <iostream>

#include "agent/container.h"
#include "agent/heartbeat.h"
#include "cli/agent.h"
#include "cli/commands.h"
#include "cli/notebook.h"
#include "cli/secret.h"
#include "cli/dry_run.h"
#include "cli/simulate.h"
#include "cli/up.h"
#include "server/api.h"

using namespace allot::cli;  // NOLINT: the entry point only.

int main(int argc, char** argv) {
  CLI::App app{"allot: a GPU-as-a-Service control plane"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "every command's help");
  ClientFlags cf;
  auto client_flags = [&](CLI::App* sub) {
    sub->add_option("--server", cf.server, "server URL (ALLOT_SERVER)");
    sub->add_option("--token", cf.token, "bearer token (ALLOT_TOKEN)");
    sub->add_option("--ca", cf.ca_file, "trust this CA for https");
    sub->add_flag("--insecure", cf.insecure, "skip TLS verification");
  };
  int rc = 0;

  auto* version = app.add_subcommand("version", "print the version");
  version->callback([&] { std::cout << "allot " << allot::server::kVersion << "\n"; });

  // schedule --dry-run
  auto* schedule = app.add_subcommand(
      "schedule", "run the scheduler once over manifest files (--dry-run)");
  bool dry_run = false;
  std::vector<std::string> sched_files;
  schedule->add_flag("--dry-run", dry_run, "print decisions; change nothing")->required();
  schedule->add_option("-f,--file", sched_files, "manifest file (- = stdin)")->required();
  schedule->callback([&] { rc = RunDryRun(sched_files, std::cout, std::cerr); });

  // simulate (docs/simulate.md)
  SimulateFlags smf;
  auto* simulate = app.add_subcommand(
      "simulate", "replay a trace on a virtual clock with the real scheduler");
  simulate->add_option("-f,--file", smf.files, "cluster config manifests (- = stdin)");
  simulate->add_option("--trace", smf.trace,
                       "philly:PATH, alibaba:PATH, alibaba-single:PATH, csv:PATH "
                       "or synthetic:JOBS[:SEED[:GPUS[:TENANTS]]]");
  simulate->add_option("--from-history", smf.from_history,
                       "replay what this server recorded: its finished and running "
                       "workloads (URL; token as for client verbs)");
  simulate->add_option("--policy", smf.policy,
                       "as-given|fifo|strict|kueue|fair|allot|park")->capture_default_str();
  simulate->add_flag("--compare", smf.compare, "run several policies, print a table");
  simulate->add_option("--policies", smf.policies, "with --compare: these (default all)")
      ->delimiter(',');
  simulate->add_option("--checkpoint-interval", smf.checkpoint_interval,
                       "a preempted job keeps progress up to its last checkpoint (e.g. 30m)");
  simulate->add_option("--mtbf", smf.mtbf, "mean time between failures per node (e.g. 2000h)");
  simulate->add_option("--mttr", smf.mttr, "mean repair time")->capture_default_str();
  simulate->add_option("--seed", smf.seed, "failure generator seed")->capture_default_str();
  simulate->add_option("--window", smf.window, "time-series window")->capture_default_str();
  simulate->add_option("--idle-model", smf.idle_model,
                       "long-running jobs go idle: busy=D,idle=D[,long=D] (mean periods; "
                       "long: other jobs running at least D count too)");
  simulate->add_option("--park-after", smf.park_after,
                       "with policy park: idle this long parks a job")->capture_default_str();
  simulate->add_option("--preemptible", smf.preemptible,
                       "share of the other jobs that are preemptible (0..1)")
      ->capture_default_str();
  simulate->add_option("--autoscale", smf.autoscale,
                       "autoscaled NodePools: fixed|reactive|headroom|headroom=WINDOW, several to compare "
                       "(each policy under each)")
      ->delimiter(',');
  simulate->add_flag("--strict", smf.strict, "malformed rows and rejected jobs are fatal");
  simulate->add_option("-o,--output", smf.output, "JSON summary file (- = stdout)")
      ->capture_default_str();
  simulate->add_option("--html", smf.html, "write a self-contained HTML report");
  simulate->add_option("--philly-config", smf.philly_config,
                       "print the Philly config for this philly_vc_nodes.csv and exit");
  simulate->add_option("--philly-scale", smf.philly_scale,
                       "with --philly-config: nodes per VC x this (e.g. 0.25)")
      ->capture_default_str();
  simulate->add_option("--synthetic-config", smf.synthetic_config,
                       "print a synthetic config GPUS:TENANTS and exit");
  client_flags(simulate);
  simulate->callback([&] { rc = RunSimulate(smf, cf, std::cout, std::cerr); });

  // serve
  ServeFlags sf;
  auto* serve = app.add_subcommand("serve", "run the control plane");
  serve->add_option("--listen", sf.listen, "host:port")->capture_default_str();
  serve->add_option("--store", sf.store, "sqlite:PATH (default under $XDG_DATA_HOME/allot or /var/lib/allot)");
  serve->add_option("--tls-cert", sf.tls_cert, "PEM certificate chain");
  serve->add_option("--tls-key", sf.tls_key, "PEM private key");
  serve->add_option("--admin-token-file", sf.admin_token_file,
                    "register the cluster-admin token in this file");
  serve->add_option("--secret-key-file", sf.secret_key_file,
                    "the key that seals Secrets (default: STORE_PATH.secret-key, "
                    "created on first start)");
  serve->add_option("--pool-dir", sf.pool_dir,
                    "where the local NodePool provider keeps its agents' pid files, logs "
                    "and token (default: STORE_PATH.pools)");
  serve->add_option("--threads", sf.threads, "network threads")->capture_default_str();
  serve->add_option("--node-timeout", sf.node_timeout_s,
                    "seconds without a heartbeat before an agent's node is NotReady")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            int64_t s = 0;
            if (!CLI::detail::lexical_cast(v, s) || s > 3600) {
              return "--node-timeout must be a whole number of seconds from " +
                     std::to_string(allot::agent::kMinNodeTimeoutS) + " to 3600, not " + v;
            }
            if (s < allot::agent::kMinNodeTimeoutS) {
              return "--node-timeout " + v + " is too short: an agent that lost "
                     "its connection retries every " +
                     std::to_string(allot::agent::kMaxReconnectBackoffMs / 1000) +
                     " s at most, so a node timeout under " +
                     std::to_string(allot::agent::kMinNodeTimeoutS) +
                     " s would declare healthy nodes NotReady";
            }
            return "";
          },
          "SECONDS", "node timeout"));
  serve->add_option("--idle-util-pct", sf.idle_util_pct,
                    "a GPU under this utilization counts as idle (allot usage idle)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  serve->add_option("--telemetry-retention-days", sf.telemetry_retention_days,
                    "keep one-minute GPU telemetry this many days")
      ->capture_default_str()
      ->check(CLI::Range(1, 3650));
  serve->add_option("--notebook-probe-interval", sf.notebook_probe,
                    "how often each running notebook's kernels and terminals are read for "
                    "activity")
      ->capture_default_str();
  serve->callback([&] { rc = CmdServe(sf); });

  // agent
  AgentFlags af;
  auto* agent = app.add_subcommand("agent", "run the node agent: register this machine, run its pods");
  agent->add_option("--name", af.name, "node name (default: the host name)");
  agent->add_option("--labels", af.labels, "node labels k=v[,k=v...], e.g. allot.dev/location=edge");
  agent->add_option("--simulate-gpus", af.simulate_gpus,
                    "simulated GPUs instead of NVML, e.g. 8xH100-80GB,2xA100-40GB");
  agent->add_flag("--simulate-exec", af.simulate_exec,
                  "run no processes: a pod ends after its allot.dev/simulated-runtime");
  agent->add_option("--cpus", af.cpus, "CPUs the node offers (default: the host's)");
  agent->add_option("--memory", af.memory, "memory the node offers, e.g. 512Gi (default: the host's)");
  agent->add_option("--run-as", af.run_as,
                    "TENANT=USER[,...]: run tenants' pods as these unix users (* = the rest)");
  agent->add_option("--simulate-nodes", af.simulate_nodes,
                    "run N simulated nodes NAME-00000.. in this process (load tests; "
                    "needs --simulate-gpus and --simulate-exec)")
      ->check(CLI::Range(1, 100000));
  agent->add_option("--cgroups", af.cgroups,
                    "auto|off: run each pod in a cgroup (v2, else v1) with its cpu request as "
                    "quota and its memory request as limit, where the host allows")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off"}));
  agent->add_option("--cgroup-parent", af.cgroup_parent,
                    "where pods' cgroups go, a path inside the cgroup hierarchy like /allot "
                    "(default: the agent's own cgroup)");
  agent->add_option("--log-dir", af.log_dir, "pod logs (default $XDG_STATE_HOME/allot/pods or /var/log/allot/pods)");
  agent->add_option("--address", af.address, "address of this node for MASTER_ADDR (default: its name)");
  agent->add_option("--sample-seconds", af.sample_seconds,
                    "send GPU telemetry (utilization, temperature, power, memory) at most this often; 0: never")
      ->check(CLI::Range(0, 3600));
  agent->add_option("--poll-seconds", af.poll_seconds, "long-poll length, the heartbeat")
      ->capture_default_str()
      ->check(CLI::Range(1, 60));
  agent->add_option("--nvml", af.nvml_library, "NVML library to dlopen")->capture_default_str();
  agent->add_option("--runtime", af.runtime,
                    "process|container: run pods as host processes, or as OCI containers from "
                    "their images (runc, skopeo, umoci)")
      ->capture_default_str()
      ->check(CLI::IsMember({"process", "container"}));
  agent->add_option("--container-state", af.container_state,
                    "images, bundles and runc state (default: LOG_DIR/../containers)");
  agent->add_flag("--ignore-images", af.ignore_images,
                  "with --runtime process: run the command of a pod that names an image on the "
                  "host (its log says so) instead of failing it");
  agent->add_flag("--private-network", af.private_network,
                  "containers get only a loopback interface (--network private)");
  agent->add_option("--network", af.network,
                    "containers: host (default: the host's network), private (loopback only) or "
                    "tenant (a bridge per tenant, a workload's pods share one namespace, tenants "
                    "kept apart and off the host)");
  agent->add_option("--pod-cidr", af.pod_cidr,
                    "containers, --network tenant: the /16 the tenants' subnets are cut from; "
                    "one per node, for workloads across nodes")
      ->capture_default_str();
  agent->add_option("--userns-base", af.userns_base,
                    "containers: first host uid/gid of the tenants' user namespaces (65536 ids "
                    "each); 0: none, containers run as host root")
      ->capture_default_str();
  agent->add_option("--volume-root", af.volume_root,
                    "containers: where tenants' persistent volumes live, ROOT/TENANT/CLAIM "
                    "(default: CONTAINER_STATE/volumes)");
  agent->add_option("--image-gc-age", af.image_gc_age,
                    "containers: remove an image no pod has used for this long (0s: never)")
      ->capture_default_str();
  agent->add_option("--image-gc-high-percent", af.image_gc_high_percent,
                    "containers: over this disk use, remove unused images, least recently used "
                    "first, down to --image-gc-low-percent (100: never)")
      ->capture_default_str();
  agent->add_option("--image-gc-low-percent", af.image_gc_low_percent)->capture_default_str();
  agent->add_option("--insecure-registries", af.insecure_registries,
                    "registries pulled from without TLS verification, host:port[,...] "
                    "(127.0.0.1 and localhost always are)");
  agent->add_option("--nvidia-driver-root", af.nvidia_driver_root,
                    "containers: where the NVIDIA driver's device nodes, libraries and tools are "
                    "(/run/nvidia/driver under the GPU operator's driver container)")
      ->capture_default_str();
  agent->add_option("--cdi-spec-dirs", af.cdi_spec_dirs,
                    "containers: where CDI specs are read from (nvidia-ctk cdi generate); a spec "
                    "of kind nvidia.com/gpu naming a pod's GPUs wins over the driver's files")
      ->capture_default_str();
  client_flags(agent);
  agent->callback([&] { rc = CmdAgent(cf, af); });

  // container-run: a container pod's own process (agent/container.h); the
  // agent runs it, people do not.
  std::string container_pod;
  auto* crun = app.add_subcommand("container-run", "");  // Hidden (empty description).
  crun->add_option("POD_JSON", container_pod)->required();
  crun->callback([&] { rc = allot::agent::RunContainer(container_pod, std::cout); });

  // up
  UpFlags uf;
  auto* up = app.add_subcommand(
      "up", "run the server and an agent for this machine in one process (the embedded default)");
  up->add_option("--listen", uf.listen, "host:port of the API")->capture_default_str();
  up->add_option("--runtime", uf.runtime,
                 "process: pods run on this host, images ignored (their logs say so); "
                 "container: in their images (runc; needs root)")
      ->capture_default_str()
      ->check(CLI::IsMember({"process", "container"}));
  up->add_option("--data-dir", uf.data_dir,
                 "store, admin token and pod logs (default $XDG_DATA_HOME/allot or /var/lib/allot)");
  up->add_option("--simulate-gpus", uf.simulate_gpus,
                 "simulate these GPUs even if NVML finds real ones (default: real ones, "
                 "else 8xH100-80GB simulated)");
  up->add_option("--nvml", uf.nvml_library, "NVML library to dlopen")->capture_default_str();
  up->add_option("--cpus", uf.cpus, "CPUs this machine's node offers (default: the host's)");
  up->add_option("--memory", uf.memory,
                 "memory this machine's node offers, e.g. 64Gi (default: the host's)");
  up->add_flag("--demo", uf.demo,
               "load example tenants, queues and workloads into a fresh demo store");
  up->add_option("--demo-delay", uf.demo_delay_s, "seconds before the demo's second wave")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  up->callback([&] { rc = CmdUp(uf); });

  // logs
  LogsFlags lf;
  auto* logs = app.add_subcommand("logs", "print (-f: follow) the log of a workload's pod");
  logs->add_option("workload", lf.workload, "NAME or TENANT/NAME")->required();
  logs->add_option("-t,--tenant", lf.tenant, "tenant (default: the token's, else default)");
  logs->add_option("--pod", lf.pod, "pod index, 0-based over its pod sets")
      ->capture_default_str()->check(CLI::Range(0, 1000000));
  logs->add_option("--attempt", lf.attempt, "an earlier attempt (backoffLimit restarts)")
      ->check(CLI::Range(1, 1000000));
  logs->add_flag("-f,--follow", lf.follow, "keep printing until the pod ends");
  logs->add_option("--tail-bytes", lf.tail_bytes, "start this many bytes before the end")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  client_flags(logs);
  logs->callback([&] { rc = CmdLogs(cf, lf); });

  // apply
  std::vector<std::string> apply_files;
  bool apply_skip = false;
  auto* apply = app.add_subcommand("apply", "create or update objects from manifests (all or nothing)");
  apply->add_option("-f,--file", apply_files, "manifest file (- = stdin)")->required();
  apply->add_flag("--skip-unsupported", apply_skip,
                  "apply the rest when some documents are of kinds Allot does not run "
                  "(Deployment, JobSet, ...), and list those as skipped");
  client_flags(apply);
  apply->callback([&] { rc = CmdApply(cf, apply_files, apply_skip); });

  // submit
  SubmitFlags sub;
  auto* submit = app.add_subcommand("submit", "submit a workload: -f FILE, or flags -- COMMAND ARGS");
  submit->add_option("-f,--file", sub.file, "a Workload or Job manifest");
  submit->add_option("--name", sub.name, "workload name");
  submit->add_option("-t,--tenant", sub.tenant,
                     "tenant (namespace; default: the token's, else default)");
  submit->add_option("-q,--queue", sub.queue, "LocalQueue");
  submit->add_option("--gpus", sub.gpus, "GPUs (or MIG slices) per pod");
  submit->add_option("--mig", sub.mig, "MIG profile of the GPUs, e.g. 1g.10gb");
  submit->add_option("--pods", sub.pods, "pods (gang)")->capture_default_str();
  submit->add_option("--cpu", sub.cpu, "cpu per pod, e.g. 4 or 500m");
  submit->add_option("--memory", sub.memory, "memory per pod, e.g. 16Gi");
  submit->add_option("--priority-class", sub.priority_class, "WorkloadPriorityClass");
  submit->add_option("--type", sub.type, "batch|training|inference|notebook")->capture_default_str();
  submit->add_option("-e,--env", sub.env, "K=V (repeatable)");
  submit->add_option("--image", sub.image,
                     "OCI image the pods run in, or the name of a catalogue Image (allot get "
                     "images) (nodes with allot agent --runtime container)");
  submit->add_option("--pull-policy", sub.image_pull_policy, "Always, IfNotPresent or Never")
      ->check(CLI::IsMember({"Always", "IfNotPresent", "Never"}));
  submit->add_option("command", sub.command, "command and arguments (after --)");
  client_flags(submit);
  submit->callback([&] { rc = CmdSubmit(cf, sub); });

  // get
  GetFlags gf;
  auto* get = app.add_subcommand("get", "list or show objects");
  get->add_option("kind", gf.kind, "workloads|clusterqueues|localqueues|flavors|cohorts|nodes|tenants|priorityclasses|topologies|images")->required();
  get->add_option("name", gf.name, "one object");
  get->add_option("-t,--tenant", gf.tenant, "tenant (default: the token's, else default)");
  get->add_option("-o,--output", gf.output, "table|json|yaml")->capture_default_str();
  get->add_option("--api-version", gf.api_version,
                  "Kueue kinds in json and yaml output: kueue.x-k8s.io/v1beta2 or v1beta1")
      ->capture_default_str();
  get->add_flag("-w,--watch", gf.watch, "stream changes");
  get->add_option("--state", gf.state, "workloads in this state");
  get->add_option("-q,--queue", gf.queue, "workloads of this LocalQueue");
  get->add_option("-l,--label", gf.label, "k=v[,k=v]");
  get->add_option("--limit", gf.limit, "at most this many");
  client_flags(get);
  get->callback([&] { rc = CmdGet(cf, gf); });

  // describe
  std::string d_kind, d_name, d_tenant;
  auto* describe = app.add_subcommand("describe", "show an object; for a workload, why it waits and its place in line");
  describe->add_option("kind", d_kind)->required();
  describe->add_option("name", d_name)->required();
  describe->add_option("-t,--tenant", d_tenant, "tenant (default: the token's, else default)");
  client_flags(describe);
  describe->callback([&] { rc = CmdDescribe(cf, d_kind, d_name, d_tenant); });

  // delete
  std::string x_kind, x_name, x_tenant;
  bool x_drain = false;
  auto* del = app.add_subcommand("delete", "delete an object");
  del->add_option("kind", x_kind)->required();
  del->add_option("name", x_name)->required();
  del->add_option("-t,--tenant", x_tenant, "tenant (default: the token's, else default)");
  del->add_flag("--drain", x_drain, "evict admitted workloads that use it first");
  client_flags(del);
  del->callback([&] { rc = CmdDelete(cf, x_kind, x_name, x_tenant, x_drain); });

  // park / resume
  std::string p_name, p_tenant, p_prometheus, p_query, p_every;
  for (const char* action : {"park", "resume"}) {
    auto* pk = app.add_subcommand(
        action, std::string(action) == "park"
                    ? "park a workload: stop its pods and give its GPUs back, keep its quota"
                    : "resume a parked workload on free GPUs (a suspended one: back to its queue)");
    auto* by_name = pk->add_option("name", p_name, "the workload");
    pk->add_option("-t,--tenant", p_tenant, "tenant (default: the token's, else default)");
    auto* by_query = pk->add_option(
        "--query", p_query,
        "instead of a name: every workload this PromQL names (labels namespace and workload), "
        "e.g. '(time() - allot_workload_idle_since_seconds) > 1800'");
    auto* prom = pk->add_option("--prometheus", p_prometheus,
                                "the Prometheus that --query asks (http://host:9090)");
    pk->add_option("--every", p_every, "with --query: again every DURATION (30s), until killed");
    by_name->excludes(by_query);
    by_query->needs(prom);
    prom->needs(by_query);
    client_flags(pk);
    std::string a = action;
    pk->callback([&, a] {
      rc = p_query.empty() ? CmdPark(cf, a, p_name, p_tenant)
                           : CmdParkByQuery(cf, a, p_prometheus, p_query, p_every);
    });
  }

  // cordon / uncordon / drain
  std::string node;
  for (const char* action : {"cordon", "uncordon", "drain"}) {
    auto* n = app.add_subcommand(action, std::string(action) + " a node");
    n->add_option("node", node)->required();
    client_flags(n);
    std::string a = action;
    n->callback([&, a] { rc = CmdNode(cf, a, node); });
  }

  // token
  auto* token = app.add_subcommand("token", "API tokens");
  token->require_subcommand(1);
  std::string t_user, t_role, t_tenant, t_node, t_id;
  auto* tcreate = token->add_subcommand("create", "create a token (printed once)");
  tcreate->add_option("--user", t_user)->required();
  tcreate->add_option("--role", t_role, "cluster-admin|tenant-admin|member|viewer|node")->required();
  tcreate->add_option("--tenant", t_tenant);
  tcreate->add_option("--node", t_node,
                      "a node token only for this node name, or names with a prefix: 'sim-*' "
                      "(default: any node)");
  client_flags(tcreate);
  tcreate->callback([&] { rc = CmdTokenCreate(cf, t_user, t_role, t_tenant, t_node); });
  auto* trevoke = token->add_subcommand("revoke", "revoke a token by id");
  trevoke->add_option("id", t_id)->required();
  client_flags(trevoke);
  trevoke->callback([&] { rc = CmdTokenRevoke(cf, t_id); });
  auto* tlist = token->add_subcommand("list", "list tokens (no secrets)");
  client_flags(tlist);
  tlist->callback([&] { rc = CmdTokenList(cf); });

  // notebook
  auto* notebook = app.add_subcommand(
      "notebook", "Jupyter notebooks that start when GPUs are free, opened through the server");
  notebook->require_subcommand(1);
  NotebookFlags nf;
  auto* ncreate = notebook->add_subcommand("create", "create a notebook (it waits in its queue)");
  ncreate->add_option("name", nf.name, "the notebook's name (its address: /notebooks/TENANT/NAME/)")
      ->required();
  ncreate->add_option("-q,--queue", nf.queue, "its LocalQueue");
  auto* ngpus = ncreate->add_option("--gpus", nf.gpus, "whole GPUs")->check(CLI::Range(0, 64));
  ncreate->add_option("--mig", nf.mig, "one MIG slice of this profile instead: 1g.10gb")
      ->excludes(ngpus);
  ncreate->add_option("--image", nf.image,
                      "an image with Jupyter (nodes that run containers); default: the node's "
                      "jupyter-notebook");
  ncreate->add_option("--cpu", nf.cpu, "CPU request: 2, 500m");
  ncreate->add_option("--memory", nf.memory, "memory request: 8Gi");
  ncreate->add_option("--idle-after", nf.idle_after,
                      "park it after this long without activity (default: its queue's "
                      "allot.dev/idle-after, else 60m; 0s: never)");
  auto* nlist = notebook->add_subcommand("list", "list notebooks: state, GPUs, last activity");
  auto* nopen = notebook->add_subcommand(
      "open", "print a link that signs a browser in to the notebook (resumes a parked one)");
  nopen->add_option("name", nf.name)->required();
  nopen->add_flag("--browser", nf.browser, "open the link with xdg-open");
  auto* nstop = notebook->add_subcommand(
      "stop", "stop a notebook: its GPUs go back, its files and quota stay (open resumes it)");
  nstop->add_option("name", nf.name)->required();
  auto* ndel = notebook->add_subcommand("delete", "delete a notebook (its files stay)");
  ndel->add_option("name", nf.name)->required();
  for (auto* sub : {ncreate, nlist, nopen, nstop, ndel}) {
    sub->add_option("-t,--tenant", nf.tenant, "tenant (default: the token's, else default)");
    client_flags(sub);
  }
  ncreate->callback([&] { rc = CmdNotebookCreate(cf, nf); });
  nlist->callback([&] { rc = CmdNotebookList(cf, nf); });
  nopen->callback([&] { rc = CmdNotebookOpen(cf, nf); });
  nstop->callback([&] { rc = CmdNotebookStop(cf, nf); });
  ndel->callback([&] { rc = CmdNotebookDelete(cf, nf); });

  // secret
  auto* secret = app.add_subcommand("secret", "a tenant's Secrets (values sealed at rest)");
  secret->require_subcommand(1);
  SecretFlags xf;
  auto* screate = secret->add_subcommand(
      "create", "create a Secret from literals, files, registry credentials or -f FILE");
  screate->add_option("name", xf.name, "the Secret's name (or metadata.name of -f)");
  screate->add_option("--from-literal", xf.literals, "KEY=VALUE (repeatable)");
  screate->add_option("--from-file", xf.files,
                      "[KEY=]PATH: the file's bytes as KEY (default: its name; repeatable)");
  screate->add_option("--type", xf.type,
                      "Opaque (default), kubernetes.io/dockerconfigjson, "
                      "kubernetes.io/basic-auth or kubernetes.io/tls");
  screate->add_option("--docker-server", xf.docker_server,
                      "registry host[:port]: make registry credentials (an imagePullSecret)");
  screate->add_option("--docker-username", xf.docker_username);
  screate->add_option("--docker-password", xf.docker_password);
  screate->add_option("-f,--filename", xf.manifest, "a v1 Secret manifest (YAML or JSON)");
  screate->add_flag("--replace", xf.replace, "replace the Secret if it exists");
  screate->add_option("-t,--tenant", xf.tenant, "tenant (default: the token's, else default)");
  client_flags(screate);
  screate->callback([&] { rc = CmdSecretCreate(cf, xf); });
  auto* sget = secret->add_subcommand("get", "list Secrets, or one: names, types, keys (no values)");
  sget->add_option("name", xf.name);
  sget->add_flag("--values", xf.values,
                 "print the Secret with its values (base64, the tenant's admins only; audited)");
  sget->add_option("-t,--tenant", xf.tenant, "tenant (default: the token's, else default)");
  client_flags(sget);
  sget->callback([&] { rc = CmdSecretGet(cf, xf); });
  auto* sdel = secret->add_subcommand("delete", "delete a Secret");
  sdel->add_option("name", xf.name)->required();
  sdel->add_option("-t,--tenant", xf.tenant, "tenant (default: the token's, else default)");
  client_flags(sdel);
  sdel->callback([&] { rc = CmdSecretDelete(cf, xf); });

  // audit
  auto* audit = app.add_subcommand("audit", "the audit log");
  audit->require_subcommand(1);
  std::map<std::string, std::string> aq;
  auto* alist = audit->add_subcommand("list", "list audit records");
  alist->add_option("--principal", aq["principal"]);
  alist->add_option("--tenant", aq["tenant"]);
  alist->add_option("--verb", aq["verb"]);
  alist->add_option("--since-ms", aq["sinceUnixMs"], "unix milliseconds");
  alist->add_option("--until-ms", aq["untilUnixMs"], "unix milliseconds");
  alist->add_option("--after", aq["after"], "records after this seq");
  alist->add_option("--limit", aq["limit"]);
  client_flags(alist);
  alist->callback([&] { rc = CmdAuditList(cf, aq); });
  std::string verify_store;
  auto* averify = audit->add_subcommand("verify", "check the hash chain");
  averify->add_option("--store", verify_store, "verify this store file directly (sqlite:PATH)");
  client_flags(averify);
  averify->callback([&] { rc = CmdAuditVerify(cf, verify_store); });
  std::string ack_reason;
  auto* aack = audit->add_subcommand(
      "acknowledge", "accept a broken audit log tail so that changes resume (recorded in the log)");
  aack->add_option("--reason", ack_reason, "why the break is accepted (kept in the record)")
      ->required();
  client_flags(aack);
  aack->callback([&] { rc = CmdAuditAcknowledge(cf, ack_reason); });

  // usage
  allot::cli::UsageFlags uf_usage;
  auto* usage = app.add_subcommand("usage", "GPU usage and cost by tenant, queue, flavor, user or workload");
  usage->add_option("--by", uf_usage.by, "tenant, queue, clusterqueue, flavor, user or workload")
      ->capture_default_str();
  usage->add_option("--since", uf_usage.since,
                    "from: 2026-12-01, 2026-12-01T08:00:00Z, unix ms, or an age (24h, 7d)");
  usage->add_option("--until", uf_usage.until, "to (same forms; default now)");
  usage->add_option("--tenant", uf_usage.tenant, "one tenant only (admins)");
  usage->add_option("-o,--output", uf_usage.output, "table, csv or json")->capture_default_str();
  client_flags(usage);
  usage->callback([&] { if (!uf_usage.idle) rc = CmdUsage(cf, uf_usage); });
  auto* uidle = usage->add_subcommand("idle", "workloads holding GPUs that are idle");
  uidle->add_option("--minutes", uf_usage.minutes, "idle for at least this long")
      ->capture_default_str();
  uidle->add_option("-o,--output", uf_usage.output, "table, csv or json");
  uidle->add_option("--tenant", uf_usage.tenant, "one tenant only (admins)");
  client_flags(uidle);
  uidle->callback([&] { uf_usage.idle = true; rc = CmdUsage(cf, uf_usage); });

  auto* whoami = app.add_subcommand("whoami", "who the token is");
  client_flags(whoami);
  whoami->callback([&] { rc = CmdWhoami(cf); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  return rc;
}
