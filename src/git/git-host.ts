/**
 * What a code host offers the git searches, one implementation per provider (git-host-a.ts for git host
 * A). A session is one user's token on that host for one request: every call it makes shares the
 * request's deadline. Listings are read a host page at a time; the search service pages over them.
 */
import type { GitProvider } from '../schemas/app-conversations';
import type {
  GitBranch,
  GitRepository,
  GitSuggestedTask,
  RepositorySortOrder,
  UserGitInfo,
} from '../schemas/git-searches';

/** One page of a host listing, and whether the host has a page after it. */
export interface HostPage<T> {
  items: T[];
  hasNext: boolean;
}

/** Reads the host's page `page` (from 1) of `perPage` items. */
export type HostListing<T> = (page: number, perPage: number) => Promise<HostPage<T>>;

/** How a search is read from the host. */
export interface HostListingPlan<T> {
  /** Listings walked one after the other (suggested tasks: pull requests, then issues). */
  parts: HostListing<T>[];
  /**
   * The items to answer, when the host cannot filter by itself (then its pages are read 100 items at a
   * time and filtered here).
   */
  keep?: (item: T) => boolean;
}

export interface RepositorySearch {
  query?: string;
  installationId?: string;
  sortOrder?: RepositorySortOrder;
}

export interface GitHostSession {
  user(): Promise<UserGitInfo>;
  /** The organizations (groups, workspaces) the user belongs to, by name. */
  organizations(): Promise<string[]>;
  repositories(search: RepositorySearch): HostListingPlan<GitRepository>;
  /** Branches of `repository` (owner/repo) whose name contains `query`, case-insensitive. */
  branches(repository: string, query: string): HostListingPlan<GitBranch>;
  /** Ids of the app installations the user can reach. */
  installations(): HostListingPlan<string>;
  suggestedTasks(): HostListingPlan<GitSuggestedTask>;
}

/** The bound of one request's calls to the host. */
export interface Deadline {
  signal: AbortSignal;
  /** Its length, for the message when it runs out. */
  ms: number;
}

export interface GitHost {
  readonly provider: GitProvider;
  session(token: string, deadline: Deadline): GitHostSession;
}
