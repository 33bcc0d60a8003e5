defmodule EchoMQ.VectorsTest do
  @moduledoc """
  Every golden vector of protocol/vectors/ (read from the repository, never
  copied) replayed through this package's connectors, on Lua and on Native,
  one test per case and executor.
  """
  use ExUnit.Case, async: true

  alias EchoMQ.Test.{Server, Vectors}

  for path <- Path.wildcard(Path.join(Vectors.folder(), "*.json")), do: @external_resource(path)

  setup_all do
    Server.module_path()
    servers = %{lua: Server.start(:lua), native: Server.start(:native)}
    conns = Map.new(servers, fn {kind, server} -> {kind, Server.connect(server)} end)
    vias = Map.new(conns, fn {kind, conn} -> {kind, elem(EchoMQ.Connector.detect(conn), 1)} end)
    on_exit(fn -> Enum.each(servers, fn {_, s} -> Server.stop(s) end) end)
    %{conns: conns, vias: vias}
  end

  test "the vectors hold every transition this package knows" do
    named = Vectors.cases() |> Enum.map(fn {_, _, t, _} -> String.to_atom(t) end) |> MapSet.new()
    assert named == EchoMQ.Protocol.transitions() |> Map.keys() |> MapSet.new()
    assert length(Vectors.cases()) >= 150
  end

  for kind <- [:lua, :native], {file, index, _transition, name} <- Vectors.cases() do
    @tag kind: kind
    test "#{kind} #{file}: #{name}", %{conns: conns, vias: vias, kind: kind} do
      wrong = Vectors.replay(conns[kind], vias[kind], kind, unquote(file), unquote(index))
      assert wrong == [], Enum.join(wrong, "\n")
    end
  end
end
