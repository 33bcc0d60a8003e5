defmodule EchoMQ.MixProject do
  use Mix.Project

  # The seed's own host: EchoMQ.Jobs in the language it was written in.
  # Its dependencies are Debian's Erlang packages (erlang-redis-client for
  # eredis, erlang-jiffy for JSON), found on the Erlang code path: nothing
  # is fetched from Hex.
  def project do
    [
      app: :echomq,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: Mix.env() == :prod,
      elixirc_paths: elixirc_paths(Mix.env()),
      deps: [],
      docs: [main: "EchoMQ"]
    ]
  end

  def application do
    [extra_applications: [:logger, :crypto, :eredis, :jiffy], mod: {EchoMQ.Application, []}]
  end

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
