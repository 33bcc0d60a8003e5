defmodule EchoMQ.Test.Server do
  @moduledoc """
  A real redis-server of the test's own (never a mock) on 127.0.0.1 and a
  free port (never 6379), stopped by `stop/1`; with the echomq module
  loaded for `:native`. The binaries from environment variables, as the
  Python speaker's tests take them:

  - `ECHOMQ_REDIS_SERVER`: redis-server (default: on PATH);
  - `ECHOMQ_MODULE`: the module's .so (default: the repository's
    `target/debug/libechomq_module.so`);
  - `ECHOMQ_EMQ`: the `emq` CLI (default: `target/debug/emq`).
  """

  defstruct [:kind, :port, :os_pid, :dir, :port_ref]

  @doc "A server for `kind` (`:lua`, without the module; `:native`, with it), up and answering."
  def start(kind) do
    dir = Path.join(System.tmp_dir!(), "echomq-ex-redis-#{System.unique_integer([:positive])}")
    File.mkdir_p!(dir)
    try_start(kind, dir, 5, "")
  end

  defp try_start(_kind, dir, 0, log), do: raise("redis-server did not start in #{dir}; its log:\n#{log}")

  defp try_start(kind, dir, tries, _log) do
    port = free_port()

    args =
      ["--port", "#{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"] ++
        ["--daemonize", "no", "--dir", dir, "--logfile", Path.join(dir, "redis.log")] ++
        if(kind == :native, do: ["--loadmodule", module_path()], else: [])

    # A shell between: it says the server's pid, then kills the server when
    # its stdin closes, so a test run that dies leaves no server behind.
    keeper = ~s|"$0" "$@" >/dev/null 2>&1 </dev/null & echo $!; read _; kill -9 $! 2>/dev/null|
    port_ref = Port.open({:spawn_executable, "/bin/sh"}, [:binary, args: ["-c", keeper, executable() | args]])
    os_pid = receive do: ({^port_ref, {:data, line}} -> line |> String.trim() |> String.to_integer())
    server = %__MODULE__{kind: kind, port: port, os_pid: os_pid, dir: dir, port_ref: port_ref}

    if ready?(server, System.monotonic_time(:millisecond) + 20_000) do
      server
    else
      kill(os_pid)
      Port.close(port_ref)
      try_start(kind, dir, tries - 1, File.read(Path.join(dir, "redis.log")) |> elem(1) |> to_string())
    end
  end

  defp ready?(server, deadline) do
    answered =
      case :gen_tcp.connect(~c"127.0.0.1", server.port, [:binary, active: false], 500) do
        {:ok, socket} ->
          :gen_tcp.close(socket)

          case EchoMQ.Redis.open(port: server.port) do
            {:ok, conn} ->
              found = EchoMQ.Redis.query(conn, ["CONFIG", "GET", "dir"])
              EchoMQ.Redis.close(conn)
              match?({:ok, ["dir", dir]} when is_binary(dir), found) and same_dir?(found, server.dir)

            _ ->
              false
          end

        _ ->
          false
      end

    cond do
      answered -> true
      System.monotonic_time(:millisecond) > deadline -> false
      true -> Process.sleep(10) && ready?(server, deadline)
    end
  end

  defp same_dir?({:ok, ["dir", found]}, dir), do: Path.expand(found) == Path.expand(dir)

  @doc "Kill the server and remove its folder."
  def stop(%__MODULE__{os_pid: os_pid, dir: dir, port_ref: port_ref}) do
    kill(os_pid)
    # The port closes with its owner; stop may run in another process.
    if Port.info(port_ref) != nil, do: Port.close(port_ref)
    File.rm_rf(dir)
    :ok
  end

  defp kill(os_pid), do: System.cmd("kill", ["-9", "#{os_pid}"], stderr_to_stdout: true)

  @doc "A connection to the server, linked to the caller."
  def connect(%__MODULE__{port: port}) do
    {:ok, conn} = EchoMQ.Redis.open(port: port)
    conn
  end

  @doc "Where the server is, as `EchoMQ.Redis.open/1` and `EchoMQ.Worker` take it."
  def redis(%__MODULE__{port: port}), do: [host: "127.0.0.1", port: port]

  @doc "The server's URL, for emq and the Python speaker."
  def url(%__MODULE__{port: port}), do: "redis://127.0.0.1:#{port}/0"

  defp free_port do
    {:ok, socket} = :gen_tcp.listen(0, ip: {127, 0, 0, 1})
    {:ok, port} = :inet.port(socket)
    :gen_tcp.close(socket)
    port
  end

  defp executable do
    name = System.get_env("ECHOMQ_REDIS_SERVER", "redis-server")
    System.find_executable(name) || raise "redis-server is not at #{name}: install it, or set ECHOMQ_REDIS_SERVER"
  end

  @doc "The module's .so."
  def module_path do
    path =
      System.get_env("ECHOMQ_MODULE") ||
        Path.join(EchoMQ.Protocol.repository(), "target/debug/libechomq_module.so")

    if File.regular?(path), do: Path.expand(path), else: raise("the echomq module is not at #{path}: set ECHOMQ_MODULE")
  end

  @doc "The emq CLI."
  def emq_path do
    path = System.get_env("ECHOMQ_EMQ") || Path.join(EchoMQ.Protocol.repository(), "target/debug/emq")
    if File.regular?(path), do: Path.expand(path), else: raise("emq is not at #{path}: set ECHOMQ_EMQ")
  end
end
