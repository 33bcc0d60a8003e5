defmodule EchoMQ.Protocol do
  @moduledoc """
  What this package knows of the protocol, read from the repository when it
  compiles (`EchoMQ.Protocol.Source`): the version (§12), the limits
  (§11.1), and each transition's script, native command, keys in order and
  key counts (§7's table), with its expanded script and SHA1. Nothing here
  is typed in by hand; a change to PROTOCOL.md or a script recompiles it.
  """

  alias EchoMQ.Protocol.Source

  @root Source.repository(__DIR__)
  @protocol_md Path.join(@root, "PROTOCOL.md")
  @lua Path.join(@root, "crates/echomq/lua")

  @external_resource @protocol_md
  for path <- Path.wildcard(Path.join(@lua, "**/*.lua")), do: @external_resource(path)

  @text File.read!(@protocol_md)
  @version Source.version(@text)
  @limits Source.limits(@text)
  @limit_map Map.new(@limits, fn {name, low, high} -> {name, {low, high || low}} end)

  @transitions (for row <- Source.transitions(@text), into: %{} do
                  source = Source.expand(File.read!(Path.join(@lua, row.file)), @lua, @limits)
                  sha1 = :crypto.hash(:sha, source) |> Base.encode16(case: :lower)
                  {row.name, Map.merge(row, %{source: source, sha1: sha1})}
                end)

  {major, minor} = @version

  if "#{major}.#{minor}" != "#{elem(@limit_map["PROTOCOL_MAJOR"], 0)}.#{elem(@limit_map["PROTOCOL_MINOR"], 0)}",
    do: raise("PROTOCOL.md §11.1's PROTOCOL_MAJOR and PROTOCOL_MINOR are not §12's version")

  @typedoc "A transition's name, lower case: `:enqueue`, `:claim`…"
  @type transition :: atom

  @doc "The protocol version this package speaks, `{major, minor}`."
  @spec version() :: {non_neg_integer, non_neg_integer}
  def version, do: @version

  @doc "The version as text, `major.minor`."
  @spec version_text() :: binary
  def version_text, do: "#{elem(@version, 0)}.#{elem(@version, 1)}"

  @doc "Where the repository was when this package compiled (the vectors are read from it)."
  @spec repository() :: Path.t()
  def repository, do: @root

  @doc """
  One transition as §7's table describes it: `file`, `command`, `keys`
  (roles in order), `key_counts`, `effect`, and its expanded `source` and
  `sha1`.
  """
  @spec transition(transition) :: map
  def transition(name) do
    case @transitions do
      %{^name => found} -> found
      _ -> raise ArgumentError, "#{inspect(name)} is no transition of protocol #{version_text()}"
    end
  end

  @doc "Every transition by name."
  @spec transitions() :: %{transition => map}
  def transitions, do: @transitions

  @doc "Whether a transition only reads (§7's table says `reads`): sent with EVALSHA_RO."
  @spec read_only?(transition) :: boolean
  def read_only?(name), do: transition(name).effect == "reads"

  @doc "A limit of §11.1's table as `{low, high}`; a single value `n` is `{n, n}`."
  @spec limit(binary) :: {integer, integer}
  def limit(name), do: Map.fetch!(@limit_map, name)

  @doc "A single-valued limit of §11.1's table (`MAX_PAYLOAD`)."
  @spec size(binary) :: integer
  def size(name), do: elem(limit(name), 1)
end
